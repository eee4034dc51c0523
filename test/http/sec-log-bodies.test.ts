import { afterAll, beforeAll, expect, test } from "bun:test";
import { createLogger } from "../../src/log.ts";
import { ADMIN_SECRET, createTestApp, type TestApp } from "../helpers/app.ts";

// LOG_LEVEL=debug logs why each 4xx was answered. The text of a request body must never reach the log:
// a malformed body is most often a hand-written one, holding a password or the admin secret.

const lines: string[] = [];
let t: TestApp;

beforeAll(async () => {
  // The server's own logger at debug level, with the request log on, writing into `lines`.
  const log = createLogger({ level: "debug", format: "json", write: (line) => void lines.push(line) });
  t = createTestApp({ requestLog: true, context: { log } });
  await t.ready;
});
afterAll(() => t.close());

const SECRETS = ["Hunter2Password", "sk_live_9f8e7d6c", ADMIN_SECRET, "0xDEADBEEFcafe", "totally_private_value"];

test("malformed bodies with secrets in them: 400 invalid_json, and no fragment of them in the log or the answer", async () => {
  const bodies: [string, string][] = [
    ["/api/v1/auth/login", `{"email": "ada@example.com", "password": ${SECRETS[0]}}`],
    ["/api/v1/auth/register", `{"email": "ada@example.com", "password": "x" ${SECRETS[1]}}`],
    ["/api/v1/admin/login", `{"secret": ${ADMIN_SECRET.replaceAll("-", "_")}}`],
    ["/api/v1/admin/login", `{"secret": '${ADMIN_SECRET}'}`],
    ["/api/v1/auth/reset-password", `{"token": "t", "password": ${SECRETS[3]}`],
    ["/api/v1/auth/refresh", `{"refresh_token": "${SECRETS[4]}`],
    ["/api/v1/auth/refresh", `{"refresh_token": "abc"} ${SECRETS[4]}`],
  ];
  for (const [path, body] of bodies) {
    const res = await t.req("POST", path, { body });
    expect([path, res.status, res.body.code]).toEqual([path, 400, "invalid_json"]);
    expect(res.body.error).toStartWith("malformed JSON body");
    for (const s of [...SECRETS, ADMIN_SECRET.replaceAll("-", "_")]) expect(res.text).not.toContain(s);
  }
  // The log holds a line per request and one saying why each was refused, at debug level.
  const refused = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request refused");
  expect(refused.length).toBe(bodies.length);
  expect(refused.every((l) => l.level === "debug" && l.code === "invalid_json")).toBe(true);
  const all = lines.join("\n");
  for (const s of [...SECRETS, ADMIN_SECRET.replaceAll("-", "_")]) expect(all).not.toContain(s);
  // Nor any shorter piece of the secrets' text.
  expect(all).not.toMatch(/Hunter2|sk_live|DEADBEEF|private_value/);
});
