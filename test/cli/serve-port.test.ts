import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, tempDataDir } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// One port, one server: a second `baas serve` on a port already taken must fail at start, not share it.

setDefaultTimeout(60_000);

const servers: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const s of servers) await s.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test("a second server on a taken port exits 1 with 'port N is already in use' and the first keeps serving", async () => {
  const bin = await buildBinary();
  const first = await spawnServer({ cmd: [bin] });
  servers.push(first);
  const other = tempDataDir();
  dirs.push(other);
  const second = Bun.spawn([bin, "serve", "--port", String(first.port), "--host", "127.0.0.1", "--data", join(other, "d")], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ADMIN_SECRET: "" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  // Before the fix the second server started and never exited: give up after a deadline instead of hanging.
  const deadline = setTimeout(() => second.kill(9), 15_000);
  const [code, stderr] = await Promise.all([second.exited, new Response(second.stderr).text()]);
  clearTimeout(deadline);
  expect(code).toBe(1);
  expect(stderr).toContain(`port ${first.port} is already in use`);
  // A start that failed showed no admin secret, so it must not have stored one either.
  expect(stderr).not.toContain("Admin secret");
  const again = await fetch(`${first.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${ADMIN_SECRET}` } });
  expect(again.status).toBe(200);
  expect(existsSync(first.dir)).toBe(true);
});
