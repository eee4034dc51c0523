import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { memoryLogger } from "../../src/log.ts";
import { startServer, type Running } from "../../src/server.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";

const dirs: string[] = [];
const running: Running[] = [];
afterAll(async () => {
  for (const r of running) await r.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function start(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), "baas-puburl-"));
  dirs.push(dir);
  const r = await startServer(loadConfig({ data: dir, port: 0, host: "127.0.0.1" }, { ADMIN_SECRET, ...env }), { log: memoryLogger() });
  running.push(r);
  const res = await fetch(`${r.url}/api/v1/admin/settings`, { headers: { authorization: `Bearer ${ADMIN_SECRET}` } });
  return { port: r.server.port, urls: (await res.json()).oauth_redirect_urls };
}

test("on port 0 without PUBLIC_URL the OAuth redirect addresses carry the port the server got", async () => {
  const { port, urls } = await start({});
  expect(port).toBeGreaterThan(0);
  expect(urls.oidc).toBe(`http://localhost:${port}/api/v1/auth/oauth/oidc/callback`);
});

test("an explicit PUBLIC_URL is kept as given", async () => {
  const { urls } = await start({ PUBLIC_URL: "https://api.example.com/" });
  expect(urls.codehost).toBe("https://api.example.com/api/v1/auth/oauth/codehost/callback");
});
