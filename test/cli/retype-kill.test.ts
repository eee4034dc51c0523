import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { requireCollection } from "../../src/catalog/catalog.ts";
import { createCollection } from "../../src/collections/admin.ts";
import { bulkCreate } from "../../src/records/bulk.ts";
import { ADMIN } from "../../src/principal.ts";
import { tempDataDir, withDataDir } from "../helpers/cli.ts";
import { databaseUrlForDir, onPostgres } from "../helpers/engine.ts";
import { waitFor } from "../helpers/wait.ts";

// A process killed (SIGKILL) while it changes the type of a field of 20,000 records loses nothing: afterwards the
// field has the old type and every old value, or the new type and every value converted; never a mix
// (CONTRACT §13: one transaction).

setDefaultTimeout(120_000);

const N = 20_000;
const CHILD = resolve(import.meta.dir, "../fixtures/schema/retype-child.ts");
let dir: string;

beforeAll(async () => {
  dir = tempDataDir();
  await withDataDir(dir, async (ctx) => {
    await createCollection(ctx, { name: "big", fields: [{ name: "seq", type: "number" }, { name: "n", type: "text" }] });
    for (let from = 0; from < N; from += 500)
      await bulkCreate(ctx, "big", Array.from({ length: 500 }, (_, k) => ({ seq: from + k, n: String(from + k) })), ADMIN);
  });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The field's type and whether every value is the record's `seq` as that type. */
async function state(): Promise<{ type: string; consistent: boolean; rows: number }> {
  return await withDataDir(dir, async (ctx) => {
    const col = await requireCollection(ctx, "big");
    const type = col.fieldMap.get("n")!.type;
    const rows = await ctx.db.all<{ seq: number; n: unknown }>(`SELECT "seq", "n" FROM "big"`);
    const consistent = rows.every((r) => (type === "number" ? r.n === r.seq : r.n === String(r.seq)));
    return { type, consistent, rows: rows.length };
  });
}

/** Starts the retype in a child process, kills it `delay` ms after it begins; whether it had finished. */
async function killDuring(to: string, delay: number): Promise<boolean> {
  const database = onPostgres ? await databaseUrlForDir(dir) : "";
  const proc = Bun.spawn([process.execPath, CHILD, dir, database, "big", "n", to], { stdout: "pipe", stderr: "pipe", env: process.env });
  let out = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out += decoder.decode(value);
    }
  })();
  await waitFor(() => out.includes("begin") || proc.exitCode !== null, { timeoutMs: 30_000, what: "the child to begin" });
  if (!out.includes("begin")) throw new Error(`the child failed: ${await new Response(proc.stderr).text()}`);
  await Bun.sleep(delay);
  proc.kill("SIGKILL");
  await proc.exited;
  await reading;
  return out.includes("done");
}

test("a retype killed at any moment leaves the old type and values or the new ones, never a mix", async () => {
  let interrupted = 0;
  let type = "text";
  for (const delay of [1, 20, 60, 150, 400]) {
    const to = type === "text" ? "number" : "text";
    const finished = await killDuring(to, delay);
    const now = await state();
    expect({ delay, rows: now.rows, consistent: now.consistent }).toEqual({ delay, rows: N, consistent: true });
    expect([type, to]).toContain(now.type);
    // Killed before it said it committed: a commit may have just landed, so either state is allowed; but
    // one that said so must have left the new state.
    if (finished) expect(now.type).toBe(to);
    else interrupted++;
    type = now.type;
  }
  // The kills must have landed inside a change at least once, or this test would prove nothing.
  expect(interrupted).toBeGreaterThan(0);
});
