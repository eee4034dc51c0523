import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { collectGarbage } from "../../src/files/gc.ts";
import { storageOf } from "../../src/files/storage.ts";
import { namesOf } from "../../src/files/values.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { databaseEnv, withDataDir } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

// Files and the life of a process (CONTRACT §14): a server killed (SIGKILL) in the middle of an upload leaves no
// record naming a missing file, only files no record names, which `baas storage gc` removes; `baas backup`
// copies the files beside the database.

setDefaultTimeout(120_000);

const ROOT = resolve(import.meta.dir, "../..");
const admin = { authorization: `Bearer ${ADMIN_SECRET}` };
let srv: ServerProcess;

/** Every stored file of `docs` (partial ones too). */
const stored = (dir: string) => {
  const d = join(dir, "storage", "docs");
  return existsSync(d) ? readdirSync(d).filter((f) => f !== "thumbs") : [];
};

async function upload(url: string, parts: Record<string, Blob | string>) {
  const form = new FormData();
  for (const [k, v] of Object.entries(parts)) if (typeof v === "string") form.append(k, v);
  else form.append(k, v, "f.bin");
  const res = await fetch(`${url}/api/v1/docs`, { method: "POST", body: form, headers: admin });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  srv = await spawnServer();
  const res = await fetch(`${srv.url}/api/v1/admin/collections`, {
    method: "POST",
    headers: { ...admin, "content-type": "application/json" },
    body: JSON.stringify({ name: "docs", fields: [{ name: "doc", type: "file", max_size: 256 * 1024 * 1024 }] }),
  });
  expect(res.status).toBe(201);
});
afterAll(() => srv.cleanup());

test("serve warns at start when it runs on PostgreSQL with files in a local folder", () => {
  const warned = srv.stderr().includes("several nodes on one PostgreSQL database need shared storage");
  expect(warned).toBe(onPostgres);
});

test("kill -9 in the middle of an upload leaves no record naming a missing file; gc removes what it left", async () => {
  const done = await upload(srv.url, { doc: new Blob(["a complete file"]) });
  expect(done.status).toBe(201);
  // A 64 MiB upload sent slowly: the server is killed once part of it is on disk.
  const boundary = "killboundary";
  const head = new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="doc"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  let sent = 0;
  const chunk = new Uint8Array(256 * 1024).fill(7);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
    },
    async pull(c) {
      if (sent >= 64 * 1024 * 1024) return c.close();
      sent += chunk.length;
      c.enqueue(chunk);
      if (sent > 4 * 1024 * 1024) await Bun.sleep(5);
    },
  });
  const pending = fetch(`${srv.url}/api/v1/docs`, {
    method: "POST",
    body,
    headers: { ...admin, "content-type": `multipart/form-data; boundary=${boundary}` },
    // @ts-expect-error Bun's fetch streams a request body with duplex "half"
    duplex: "half",
  }).catch(() => null);
  await waitFor(() => stored(srv.dir).some((f) => f.endsWith(".partial")), { what: "part of the upload on disk" });
  await srv.kill9();
  await pending;
  await withDataDir(srv.dir, async (ctx) => {
    ctx.config.storage = { kind: "local", dir: join(srv.dir, "storage") };
    const rows = await ctx.db.all<{ doc: string }>(`SELECT "doc" FROM "docs"`);
    expect(rows).toHaveLength(1);
    const files = stored(srv.dir);
    for (const r of rows) for (const n of namesOf(r.doc)) expect(files).toContain(n);
    expect(files.filter((f) => f.endsWith(".partial"))).toHaveLength(1);
    // Young files are left alone (an upload may be in flight); past the grace period the partial one goes.
    expect((await collectGarbage(ctx, { dryRun: true })).orphans).toEqual([]);
    const gc = await collectGarbage(ctx, { graceMs: -60_000 });
    expect(gc.orphans).toHaveLength(1);
    expect(gc.orphans[0]).toEndWith(".partial");
    expect(stored(srv.dir)).toEqual([rows[0]!.doc]);
  });
});

test("storage gc finds files no record names (dry run first), keeps those of soft-deleted records; backup copies the files", async () => {
  const dir = srv.dir;
  const live = join(dir, "storage", "docs");
  mkdirSync(live, { recursive: true });
  await withDataDir(dir, async (ctx) => {
    ctx.config.storage = { kind: "local", dir: join(dir, "storage") };
    const rows = await ctx.db.all<{ doc: string }>(`SELECT "doc" FROM "docs"`);
    // A record soft-deleted keeps its file; an orphan and an old thumbnail of it are found.
    await ctx.db.run(`UPDATE "docs" SET "_deleted_at" = 1`);
    writeFileSync(join(live, "abcdefghij_orphan.txt"), "no record names me");
    mkdirSync(join(live, "thumbs", "abcdefghij_orphan.txt"), { recursive: true });
    writeFileSync(join(live, "thumbs", "abcdefghij_orphan.txt", "10x10"), "thumb");
    const old = new Date(Date.now() - 2 * 3600_000);
    utimesSync(join(live, "abcdefghij_orphan.txt"), old, old);
    utimesSync(join(live, "thumbs", "abcdefghij_orphan.txt", "10x10"), old, old);
    for (const r of rows) utimesSync(join(live, r.doc), old, old);
    const cli = async (...args: string[]) => {
      const cmd = [process.execPath, join(ROOT, "cli/index.ts"), "--data", dir, ...args, "--json"];
      const p = Bun.spawn(cmd, { env: { ...process.env, ...(await databaseEnv(["--data", dir], dir)) }, stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
      if (code !== 0) throw new Error(`exit ${code}: ${err}`);
      return JSON.parse(out);
    };
    const dry = await cli("storage", "gc", "--dry-run");
    expect(dry.orphans.sort()).toEqual(["docs/abcdefghij_orphan.txt", "docs/thumbs/abcdefghij_orphan.txt/10x10"]);
    expect(existsSync(join(live, "abcdefghij_orphan.txt"))).toBe(true);
    const real = await cli("storage", "gc");
    expect(real.removed).toBe(2);
    expect(existsSync(join(live, "abcdefghij_orphan.txt"))).toBe(false);
    expect(stored(dir)).toEqual([rows[0]!.doc]);
    if (!onPostgres) {
      const file = join(dir, "backup.db");
      const b = await cli("backup", file);
      expect(b.files).toBe(1);
      expect(readdirSync(join(`${file}.storage`, "docs"))).toEqual([rows[0]!.doc]);
    }
    // The storage of a context follows its configuration.
    expect(storageOf(ctx).kind).toBe("local");
  });
  rmSync(join(dir, "backup.db.storage"), { recursive: true, force: true });
});
