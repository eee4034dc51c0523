import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { createTestDatabase, postgresAvailable } from "../helpers/postgres.ts";

// `--database` / DATABASE_URL on every command: a PostgreSQL database is used, or, when it cannot be
// reached, the command stops; it never quietly falls back to the data directory's SQLite file (nodes
// meant to share one database would each write their own).

setDefaultTimeout(60_000);

let bin: string;
const dir = tempDataDir();
beforeAll(async () => {
  bin = await buildBinary();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DOWN = { DATABASE_URL: "postgres://baas:secret-pw@127.0.0.1:1/baas", ADMIN_SECRET: "a-long-enough-admin-secret" };

// serve waits for the database (--wait-for-database, 30 s by default): 1 s here, then it gives up the same way.
for (const args of [["serve", "--port", "0", "--wait-for-database", "1"], ["collections", "list"], ["users", "list"]]) {
  test(`${args.join(" ")} with an unreachable PostgreSQL DATABASE_URL exits 1 naming it, without its password, and writes no SQLite file`, async () => {
    const r = await runCli(bin, [...args, "--data", dir], { env: DOWN });
    expect(r.code).toBe(1);
    // Only serve waits, saying why (the CLI's other commands, run by hand, say at once that it is down).
    expect(r.stderr.includes("waiting for the database")).toBe(args[0] === "serve");
    expect(r.stderr).toContain("cannot use the PostgreSQL database at 127.0.0.1:1/baas");
    expect(r.stderr).not.toContain("secret-pw");
    expect(existsSync(join(dir, "baas.db"))).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });
}

test("--database wins over DATABASE_URL and is refused the same way when unreachable", async () => {
  const r = await runCli(bin, ["collections", "list", "--json", "--data", dir, "--database", "postgres://u:other-pw@127.0.0.1:1/elsewhere"], { env: { DATABASE_URL: "" } });
  expect(r.code).toBe(1);
  expect(JSON.parse(r.stderr)).toEqual({ error: expect.stringContaining("cannot use the PostgreSQL database at 127.0.0.1:1/elsewhere"), code: "unavailable" });
  expect(r.stderr).not.toContain("other-pw");
  expect(readdirSync(dir)).toEqual([]);
});

test("serve's wait for the database comes from BAAS_WAIT_FOR_DATABASE too; a value that is no whole number of seconds up to 3600 is a usage error", async () => {
  const waited = await runCli(bin, ["serve", "--port", "0", "--data", dir], { env: { ...DOWN, BAAS_WAIT_FOR_DATABASE: "0" } });
  expect(waited.code).toBe(1);
  expect(waited.stderr).not.toContain("waiting for the database");
  for (const bad of ["-1", "1.5", "abc", "3601"]) {
    const r = await runCli(bin, ["serve", "--port", "0", "--data", dir, "--wait-for-database", bad], { env: DOWN });
    expect([bad, r.code]).toEqual([bad, 2]);
    expect(r.stderr).toContain("--wait-for-database");
  }
  expect(readdirSync(dir)).toEqual([]);
});

test("a malformed DATABASE_URL is a usage error that does not repeat the URL", async () => {
  const r = await runCli(bin, ["collections", "list", "--data", dir], { env: { DATABASE_URL: "mysql://u:pw-123@h/db" } });
  expect(r.code).toBe(2);
  expect(r.stderr).not.toContain("pw-123");
});

describe.skipIf(!postgresAvailable)("a reachable database", () => {
  test("commands given DATABASE_URL or --database store in it, not in the data directory", async () => {
    const url = await createTestDatabase();
    const dir = tempDataDir();
    const made = await runCli(bin, ["collections", "create", "posts", "--data", dir], { env: { DATABASE_URL: url } });
    expect(made.code).toBe(0);
    const listed = await runCli(bin, ["collections", "list", "--json", "--data", dir, "--database", url], { env: { DATABASE_URL: "" } });
    expect(listed.code).toBe(0);
    expect(listed.json().items.map((c: { name: string }) => c.name)).toEqual(["posts"]);
    // The data directory's SQLite file never saw it.
    expect(readdirSync(dir)).toEqual([]);
    const sqlite = await runCli(bin, ["collections", "list", "--json", "--data", dir], { env: { DATABASE_URL: "" } });
    expect(sqlite.json().items).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });
});
