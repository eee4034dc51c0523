import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { buildBinary, runCli } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";

// `baas fts enable` on a terminal draws a progress bar while a large collection is indexed.
// `script` (util-linux) gives the binary a real pseudo-terminal.

const RECORDS = 100_000;
let seed: TestApp;
let bin: string;

beforeAll(async () => {
  if (onPostgres) return;
  bin = await buildBinary();
  seed = createTestApp();
  await seed.admin("POST", "/api/v1/admin/collections", { name: "notes" });
  for (let i = 0; i < RECORDS; i += 500) {
    const res = await seed.admin("POST", "/api/v1/notes/bulk", Array.from({ length: 500 }, (_, k) => ({ title: `note ${i + k}` })));
    if (res.status !== 201) throw new Error(`seed failed: ${res.status}`);
  }
}, 300_000);

afterAll(() => seed?.close());

/** The terminal output without colours and cursor moves, lines joined. */
function plain(out: string): string {
  return out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/[\r\n]+/g, "");
}

// The bar follows SQLite's build of the FTS5 table in steps; PostgreSQL's index is a generated column,
// complete as soon as it is enabled, so there is nothing to follow there.
describe.skipIf(onPostgres)("baas fts enable on a terminal", () => {
  test("shows a progress bar counting the records indexed, then the status", async () => {
    expect(existsSync("/usr/bin/script")).toBe(true);
    const command = `stty cols 200 rows 40; '${bin}' fts enable notes --data '${seed.dir}'`;
    const res = await runCli("/usr/bin/script", ["-qec", command, "/dev/null"]);
    expect(res.code).toBe(0);
    const out = plain(res.stdout);
    // At least one frame between the start and the end shows the count going up.
    const counts = [...out.matchAll(/Indexing notes: (\d+) of 100000/g)].map((m) => Number(m[1]));
    expect(counts.some((n) => n > 0 && n < RECORDS)).toBe(true);
    expect(out).toContain("━");
    expect(out).toContain("Indexing notes: done");
    expect(out).toContain("state:           ready");
    expect(out).toContain("indexed_records: 100000");

    // Without a terminal (--json, a script) there is no bar: stdout is the JSON body alone.
    const json = await runCli(bin, ["fts", "status", "notes", "--json", "--data", seed.dir]);
    expect(json.json()).toEqual({ enabled: true, fields: ["title"], indexed_records: RECORDS, state: "ready" });
  }, 120_000);
});
