import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// One rule for the admin secret: ADMIN_SECRET, when set, is the secret; otherwise the stored one (generated
// at the first start) is, and only that one can be rotated. The server says at start which one it uses.

setDefaultTimeout(60_000);

const servers: ServerProcess[] = [];
const dir = tempDataDir();
afterAll(async () => {
  for (const s of servers) await s.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string>) {
  const s = await spawnServer({ dir, cmd: [await buildBinary()], env });
  servers.push(s);
  return s;
}

const status = async (s: ServerProcess, secret: string) =>
  (await fetch(`${s.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${secret}` } })).status;

const ENV_SECRET = "operator-chosen-secret-0123456789";

test("the generated secret is stored, named at start and rotated by the CLI; ADMIN_SECRET then replaces it, says so, and cannot be rotated", async () => {
  const bin = await buildBinary();
  const first = await start({ ADMIN_SECRET: "" });
  const generated = /Admin secret \(shown once, store it now\):\s+(\S+)/.exec(first.stderr())![1];
  expect(first.stderr()).toContain("admin secret: generated at this first start");

  const login = await fetch(`${first.url}/api/v1/admin/login`, { method: "POST", body: JSON.stringify({ secret: generated }) });
  const token = ((await login.json()) as { token: string }).token;
  const rotated = await runCli(bin, ["--data", dir, "admin", "rotate-secret"]);
  expect(rotated.code).toBe(0);
  const fresh = rotated.stdout.trim();
  expect(await status(first, generated)).toBe(401);
  expect(await status(first, token)).toBe(401);
  expect(await status(first, fresh)).toBe(200);
  expect(await first.stop()).toBe(0);

  const stored = await start({ ADMIN_SECRET: "" });
  expect(stored.stderr()).toContain(`admin secret: the one stored in ${onPostgres ? "the database" : "the data directory"}`);
  expect(stored.stderr()).not.toContain("Admin secret (shown once");
  expect(await status(stored, fresh)).toBe(200);
  expect(await stored.stop()).toBe(0);

  const fromEnv = await start({ ADMIN_SECRET: ENV_SECRET });
  expect(fromEnv.stderr()).toContain(`admin secret: from ADMIN_SECRET, which replaces the different secret stored in ${onPostgres ? "the database" : "the data directory"}`);
  expect(fromEnv.stderr()).not.toContain(ENV_SECRET);
  expect(await status(fromEnv, ENV_SECRET)).toBe(200);
  expect(await status(fromEnv, fresh)).toBe(401);

  // The CLI refuses whether it sees ADMIN_SECRET itself or only knows the server was started with it.
  const withEnv = await runCli(bin, ["--data", dir, "admin", "rotate-secret"], { env: { ADMIN_SECRET: ENV_SECRET } });
  expect(withEnv.code).toBe(1);
  expect(withEnv.stdout).toBe("");
  expect(withEnv.stderr).toContain("error: ADMIN_SECRET is set, so it is the admin secret and cannot be rotated");
  const withoutEnv = await runCli(bin, ["--data", dir, "admin", "rotate-secret", "--json"]);
  expect(withoutEnv.code).toBe(1);
  expect(JSON.parse(withoutEnv.stderr)).toMatchObject({ code: "conflict" });
  expect(withoutEnv.stderr).toContain("ADMIN_SECRET is set for the server of this data directory");
  expect(await status(fromEnv, ENV_SECRET)).toBe(200);
  expect(await fromEnv.stop()).toBe(0);

  const same = await start({ ADMIN_SECRET: ENV_SECRET });
  expect(same.stderr()).toContain("admin secret: from ADMIN_SECRET (rotate it by changing ADMIN_SECRET and restarting)");
  expect(await same.stop()).toBe(0);
});
