import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildBinary } from "../helpers/cli.ts";
import { spawnServer } from "../helpers/server.ts";

// The first test compiles the binary.
setDefaultTimeout(180_000);

const dir = mkdtempSync(join(tmpdir(), "baas-secret-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("minimum admin secret length", () => {
  test("baas serve with an ADMIN_SECRET shorter than 16 characters refuses to start: exit 1 and a message naming the rule", async () => {
    const bin = await buildBinary();
    const proc = Bun.spawn([bin, "serve", "--port", "0", "--host", "127.0.0.1", "--data", join(dir, "short")], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ADMIN_SECRET: "fifteen-chars-x" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    // A server that starts anyway would never exit: give it a deadline, then stop it and fail.
    const deadline = setTimeout(() => proc.kill(), 20_000);
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(deadline);
    expect(stderr).not.toContain("listening");
    expect(code).toBe(1);
    expect(stderr).toContain("ADMIN_SECRET is too short (15 characters): it must be at least 16");
  });

  test("an ADMIN_SECRET of exactly 16 characters starts, and opens the admin API", async () => {
    const bin = await buildBinary();
    const secret = "sixteen-chars-ok";
    const data = join(dir, "ok");
    mkdirSync(data);
    const s = await spawnServer({ cmd: [bin], dir: data, env: { ADMIN_SECRET: secret } });
    try {
      const res = await fetch(`${s.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${secret}` } });
      expect(res.status).toBe(200);
    } finally {
      await s.stop();
    }
  });
});
