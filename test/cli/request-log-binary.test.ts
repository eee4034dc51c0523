import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { waitFor } from "../helpers/wait.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// The request log of the real server on stderr: its formats, its level, and no secret in it.

setDefaultTimeout(60_000);

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

/** Polls `read` until `ok` holds; the wait fails only once the output stops growing for a while. */
async function until(read: () => string, ok: (s: string) => boolean): Promise<string> {
  await waitFor(() => ok(read()), { intervalMs: 25, what: "the log line", progress: () => read().length }).catch((err: Error) => {
    throw new Error(`${err.message}; got:\n${read()}`);
  });
  return read();
}

test("with --log-format json every stderr line is JSON; requests carrying secrets leave none of them in it", async () => {
  const bin = await buildBinary();
  const s = await spawnServer({ cmd: [bin], args: ["--log-format", "json"] });
  cleanups.push(() => s.cleanup());
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${s.url}/api/v1${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const password = "binary-log-password-5150";
  const reg = (await (await post("/auth/register", { email: "bin@example.test", password })).json()) as { access_token: string; refresh_token: string };
  await post("/auth/login", { email: "bin@example.test", password: "not-the-password-99" });
  await fetch(`${s.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${reg.access_token}` } });
  await post("/auth/refresh", { refresh_token: reg.refresh_token });
  await fetch(`${s.url}/api/v1/admin/collections`, { headers: { authorization: `Bearer ${ADMIN_SECRET}` } });
  const missing = await fetch(`${s.url}/api/v1/auth/verify-email?token=QUERY-TOKEN-777`, { headers: { "x-request-id": "trace-123" } });
  expect(missing.headers.get("x-request-id")).toBe("trace-123");

  const out = await until(s.stderr, (e) => e.includes('"request_id":"trace-123"'));
  const lines = out.trim().split("\n").map((l) => JSON.parse(l));
  const requests = lines.filter((l) => l.msg === "request");
  expect(requests.map((l) => [l.method, l.path, l.status])).toEqual([
    ["POST", "/api/v1/auth/register", 201],
    ["POST", "/api/v1/auth/login", 401],
    ["GET", "/api/v1/auth/me", 200],
    ["POST", "/api/v1/auth/refresh", 200],
    ["GET", "/api/v1/admin/collections", 200],
    ["GET", "/api/v1/auth/verify-email?token=***", 404],
  ]);
  for (const l of requests) {
    expect(l.level).toBe("info");
    expect(typeof l.time).toBe("string");
    expect(typeof l.duration_ms).toBe("number");
    expect(typeof l.request_id).toBe("string");
  }
  for (const secret of [password, "not-the-password-99", reg.access_token, reg.refresh_token, ADMIN_SECRET, "QUERY-TOKEN-777"])
    expect(out).not.toContain(secret);
});

test("LOG_LEVEL=warn keeps request lines out (the start lines stay), debug adds why a 4xx was answered; text is the default format", async () => {
  const bin = await buildBinary();
  const s = await spawnServer({ cmd: [bin], env: { LOG_LEVEL: "warn" } });
  cleanups.push(() => s.cleanup());
  for (let i = 0; i < 5; i++) expect((await fetch(`${s.url}/api/v1/nothing-here`)).status).toBe(404);
  expect(await s.stop()).toBe(0);
  expect(s.stderr()).toContain("baas listening on");
  expect(s.stderr()).not.toContain("nothing-here");

  const info = await spawnServer({ cmd: [bin] });
  cleanups.push(() => info.cleanup());
  await fetch(`${info.url}/api/v1/nothing-here?limit=1`);
  const text = await until(info.stderr, (e) => e.includes("nothing-here"));
  expect(text).toMatch(/Z INFO request method=GET path=\/api\/v1\/nothing-here\?limit=1 status=404 duration_ms=[\d.]+ request_id=[0-9a-f-]{36}\n/);
  expect(text).not.toContain("request refused");

  const debug = await spawnServer({ cmd: [bin], env: { LOG_LEVEL: "debug" } });
  cleanups.push(() => debug.cleanup());
  await fetch(`${debug.url}/api/v1/nothing-here`);
  const verbose = await until(debug.stderr, (e) => e.includes("INFO request"));
  expect(verbose).toMatch(/Z DEBUG request refused method=GET path=\/api\/v1\/nothing-here request_id=\S+ status=404 code=not_found error="collection \\"nothing-here\\" not found"\n/);
});

test("a bad LOG_FORMAT, --log-format or LOG_LEVEL is a usage error (exit 2)", async () => {
  const bin = await buildBinary();
  const dir = tempDataDir();
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const flag = await runCli(bin, ["serve", "--log-format", "xml", "--port", "0", "--data", dir]);
  expect(flag.code).toBe(2);
  expect(flag.stderr).toContain('log format must be one of text|json, got "xml"');
  const env = await runCli(bin, ["serve", "--port", "0", "--data", dir], { env: { LOG_FORMAT: "yaml" } });
  expect(env.code).toBe(2);
  const level = await runCli(bin, ["serve", "--port", "0", "--data", dir], { env: { LOG_LEVEL: "loud" } });
  expect(level.code).toBe(2);
  expect(level.stderr).toContain('LOG_LEVEL must be one of error|warn|info|debug, got "loud"');
});
