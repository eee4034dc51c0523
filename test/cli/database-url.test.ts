import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";

// A PostgreSQL DATABASE_URL is refused, never quietly replaced by the data directory's SQLite file:
// nodes meant to share one database would each write their own.

setDefaultTimeout(60_000);

let bin: string;
const dir = tempDataDir();
beforeAll(async () => {
  bin = await buildBinary();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PG = { DATABASE_URL: "postgres://baas:secret-pw@127.0.0.1:1/baas", ADMIN_SECRET: "a-long-enough-admin-secret" };

for (const args of [["serve", "--port", "0"], ["collections", "list"], ["users", "list"]]) {
  test(`${args.join(" ")} with a PostgreSQL DATABASE_URL exits 1 and writes no SQLite file`, async () => {
    const r = await runCli(bin, [...args, "--data", dir], { env: PG });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("DATABASE_URL (PostgreSQL) is not served by this version yet");
    expect(r.stderr).not.toContain("secret-pw");
    expect(existsSync(join(dir, "baas.db"))).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });
}

test("a malformed DATABASE_URL is a usage error that does not repeat the URL", async () => {
  const r = await runCli(bin, ["collections", "list", "--data", dir], { env: { DATABASE_URL: "mysql://u:pw-123@h/db" } });
  expect(r.code).toBe(2);
  expect(r.stderr).not.toContain("pw-123");
});
