import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";

// Only `serve` creates a data directory; help says what each command really takes; sizes are for people.

setDefaultTimeout(60_000);

let bin: string;
const root = tempDataDir();
beforeAll(async () => {
  bin = await buildBinary();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a missing data directory", () => {
  const commands = [
    ["collections", "list"],
    ["collections", "create", "posts"],
    ["users", "list"],
    ["settings", "list"],
    ["stats", "posts"],
    ["fts", "status", "posts"],
    ["indexes", "list", "posts"],
    ["relations", "list"],
    ["admin", "rotate-secret"],
    ["backup", "copy.db"],
  ];
  // On PostgreSQL the data lives in the database, not in the data directory: these are about SQLite's.
  for (const args of commands) {
    test.skipIf(onPostgres)(`'${args.join(" ")}' exits 1 with "no baas data directory at <path>" and creates nothing`, async () => {
      const missing = join(root, "typo", "data");
      const r = await runCli(bin, ["--data", missing, ...args], { cwd: root });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`error: no baas data directory at ${missing}\n`);
      expect(existsSync(join(root, "typo"))).toBe(false);
    });
  }

  test.skipIf(onPostgres)("DATA_DIR naming a missing directory is refused the same way, with --json as the API's error body", async () => {
    const missing = join(root, "nowhere");
    const r = await runCli(bin, ["users", "list", "--json"], { env: { DATA_DIR: missing } });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr)).toEqual({ error: `no baas data directory at ${missing}`, code: "not_found" });
    expect(existsSync(missing)).toBe(false);
  });

  test.skipIf(onPostgres)("a --data that names a file is refused as not a directory (exit 1), the file untouched", async () => {
    const file = join(root, "a-file");
    writeFileSync(file, "x");
    const r = await runCli(bin, ["--data", file, "collections", "list", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr)).toEqual({ error: `${file} is not a directory (--data names the data directory)`, code: "bad_request" });
    expect(readFileSync(file, "utf8")).toBe("x");
  });

  test("an existing directory without a database is one: the command creates the database in it", async () => {
    const dir = join(root, "fresh");
    mkdirSync(dir);
    const r = await runCli(bin, ["--data", dir, "collections", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ items: [] });
  });
});

describe("bad option values", () => {
  test("users list: a --limit or --page outside its range exits 2 (usage), with --json as { error, code: usage }", async () => {
    const dir = join(root, "opts");
    mkdirSync(dir);
    for (const [flag, value, error] of [["--page", "abc", "page must be an integer between 1 and 1000000"], ["--limit", "0", "limit must be an integer between 1 and 500"], ["--limit", "501", "limit must be an integer between 1 and 500"]]) {
      const r = await runCli(bin, ["--data", dir, "users", "list", flag!, value!, "--json"]);
      expect({ flag, value, code: r.code, stdout: r.stdout, err: JSON.parse(r.stderr) }).toEqual({ flag, value, code: 2, stdout: "", err: { error, code: "usage" } });
    }
    expect((await runCli(bin, ["--data", dir, "users", "list", "--limit", "5", "--json"])).code).toBe(0);
  });
});

describe("help", () => {
  test("help serve lists --data once and offers no --json; serve --json is a usage error", async () => {
    const r = await runCli(bin, ["help", "serve"]);
    expect(r.code).toBe(0);
    expect(r.stdout.match(/^\s+--data <dir>/gm)?.length).toBe(1);
    expect(r.stdout).not.toContain("--json");
    expect(r.stdout).toContain("--log-format <format>");
    const json = await runCli(bin, ["serve", "--json", "--port", "0", "--data", join(root, "never")]);
    expect(json.code).toBe(2);
    expect(json.stderr).toContain("serve has no --json output");
    expect(existsSync(join(root, "never"))).toBe(false);
  });

  test("baas --help lists the environment variables", async () => {
    const r = await runCli(bin, ["--help"]);
    expect(r.code).toBe(0);
    for (const name of ["DATA_DIR", "PORT", "HOST", "SQLITE_SYNC", "ADMIN_SECRET", "PUBLIC_URL", "APP_URL", "SMTP_URL", "MAIL_FROM", "LOG_FORMAT", "LOG_LEVEL", "CORS_ORIGINS", "LOCKOUT_MAX_ATTEMPTS", "LOCKOUT_DURATION_MS", "HOOKS_DIR", "TRUST_PROXY"])
      expect(r.stdout).toContain(name);
  });
});

// A backup is a copy of the SQLite file; on PostgreSQL it is refused (test/cli/backup-postgres.test.ts).
test.skipIf(onPostgres)("backup prints a human size and keeps the byte count in --json", async () => {
  const dir = join(root, "backed");
  mkdirSync(dir);
  const human = await runCli(bin, ["--data", dir, "backup", join(root, "one.db")]);
  expect(human.code).toBe(0);
  expect(human.stdout).toMatch(/^backup written: \S+one\.db \(\d+\.\d (KiB|MiB)\)\n$/);
  const json = await runCli(bin, ["--data", dir, "backup", join(root, "two.db"), "--json"]);
  expect(json.code).toBe(0);
  expect(json.json()).toMatchObject({ ok: true, file: join(root, "two.db") });
  expect(Number.isInteger(json.json().bytes)).toBe(true);
  expect(json.json().bytes).toBeGreaterThan(1024);
});
