import { afterAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

const ROOT = resolve(import.meta.dir, "../..");
let s: ServerProcess | null = null;
afterAll(async () => {
  await s?.cleanup();
});

/** Runs the CLI from source on the server's data directory. */
async function cli(dir: string, ...args: string[]) {
  const p = Bun.spawn([process.execPath, `${ROOT}/cli/index.ts`, "--data", dir, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}

describe("the CLI while the server is under load", () => {
  test("CLI changes land while 16 clients write, the server sees them without a restart, and no request fails", async () => {
    s = await spawnServer();
    const base = s.url;
    const admin = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };
    expect((await fetch(`${base}/api/v1/admin/collections`, { method: "POST", headers: admin, body: JSON.stringify({ name: "hits", rules: { create: "public" } }) })).status).toBe(201);

    let stop = false;
    const statuses = new Map<number, number>();
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const res = await fetch(`${base}/api/v1/hits`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ w, i }) });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        await res.arrayBuffer();
      }
    });

    const created = await cli(s.dir, "collections", "create", "fromcli", "--read", "public", "--create", "public");
    expect(created.code).toBe(0);
    const rules = await cli(s.dir, "collections", "rules", "hits", "--read", "authenticated");
    expect(rules.code).toBe(0);
    const setting = await cli(s.dir, "settings", "set", "registration_open", "false");
    expect(setting.code).toBe(0);
    stop = true;
    await Promise.all(writers);

    // Everything the CLI did is visible to the running server at once.
    expect((await fetch(`${base}/api/v1/fromcli`)).status).toBe(200);
    expect((await fetch(`${base}/api/v1/hits`)).status).toBe(401);
    const reg = await fetch(`${base}/api/v1/auth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "late@example.com", password: "password123" }) });
    expect(reg.status).toBe(403);
    expect(((await reg.json()) as { code: string }).code).toBe("registration_closed");
    expect([...statuses.keys()]).toEqual([201]);
  }, 60_000);
});
