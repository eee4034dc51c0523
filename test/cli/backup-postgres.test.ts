import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { createTestDatabase, postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// A backup is a copy of the SQLite file. On PostgreSQL `baas backup` and GET /admin/backup refuse and
// name the tool that does it there, pg_dump (CONTRACT §11), and write nothing.

setDefaultTimeout(60_000);
warnIfSkipped();

const MESSAGE = "this server stores its data in PostgreSQL: use pg_dump";

describe.skipIf(!postgresAvailable)("backup on PostgreSQL", () => {
  let bin: string;
  let url: string;
  const dir = tempDataDir();
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    bin = await buildBinary();
    url = await createTestDatabase();
  });
  afterAll(async () => {
    await server?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  test("baas backup exits 1 naming pg_dump and writes no file", async () => {
    const file = join(dir, "copy.db");
    const human = await runCli(bin, ["--data", dir, "--database", url, "backup", file]);
    expect(human.code).toBe(1);
    expect(human.stderr).toContain(MESSAGE);
    const json = await runCli(bin, ["--data", dir, "backup", file, "--json"], { env: { DATABASE_URL: url } });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({ error: expect.stringContaining(MESSAGE), code: "bad_request" });
    expect(existsSync(file)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  test("GET /admin/backup answers 400 with the same message", async () => {
    server = await spawnServer({ cmd: [bin], args: ["--database", url] });
    const res = await fetch(`${server.url}/api/v1/admin/backup`, { headers: { authorization: `Bearer ${ADMIN_SECRET}` } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringContaining(MESSAGE), code: "bad_request" });
  });
});
