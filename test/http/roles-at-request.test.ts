import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { resolvePrincipal } from "../../src/auth/principal.ts";
import { createTestApp, type TestApp, type TestResponse } from "../helpers/app.ts";
import { makeApiKey, makeCollection, makeRecord, makeUser } from "../helpers/fixtures.ts";

// CONTRACT §12, §8b: rules read the user's roles (and metadata) as stored at the request, not the copy an
// access token carries. A role granted or taken away through the admin API applies to every credential the
// user already holds (access token, API key, impersonation token) at its next request, on every path.

const t: TestApp = createTestApp();
afterAll(() => t.close());

type Cred = { token: string } | { key: string };
const creds: Record<string, Cred> = {};
let userId = "";
let draft = "";

const DENIED_READ = { error: '"read" on collection "drafts" requires the role "editor"', code: "forbidden" };

/** The paths a role rule guards, each with the status it answers when the role is held. */
const PATHS: { name: string; ok: number; call: (c: Cred) => Promise<TestResponse> }[] = [
  { name: "get", ok: 200, call: (c) => send(c, "GET", `/drafts/${draft}`) },
  { name: "list", ok: 200, call: (c) => send(c, "GET", "/drafts") },
  { name: "count", ok: 200, call: (c) => send(c, "GET", "/drafts/count") },
  { name: "create", ok: 201, call: (c) => send(c, "POST", "/drafts", { title: "by an editor" }) },
];

function send(c: Cred, method: string, path: string, body?: unknown): Promise<TestResponse> {
  const headers: Record<string, string> = "key" in c ? { "x-api-key": c.key } : {};
  return t.req(method, `/api/v1${path}`, { token: "token" in c ? c.token : undefined, headers, body });
}

/** Every credential on every path: the statuses, as one object so a failure names the pair. */
async function statuses(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [who, c] of Object.entries(creds)) for (const p of PATHS) out[`${who} ${p.name}`] = (await p.call(c)).status;
  return out;
}

function expected(held: boolean): Record<string, number> {
  const out: Record<string, number> = {};
  for (const who of Object.keys(creds)) for (const p of PATHS) out[`${who} ${p.name}`] = held ? p.ok : 403;
  return out;
}

beforeAll(async () => {
  await makeCollection(t, "drafts", { read: { role: "editor" }, create: { role: "editor" } });
  draft = await makeRecord(t, "drafts", { title: "first" });
  const ed = await makeUser(t, "ed@example.com");
  userId = ed.id;
  const imp = await t.admin("POST", `/api/v1/admin/users/${ed.id}/impersonate`);
  expect(imp.status).toBe(200);
  creds.token = { token: ed.token };
  creds.key = { key: await makeApiKey(t, ed.token) };
  creds.impersonation = { token: imp.body.access_token };
});

describe("roles at the request", () => {
  test("a role granted through the admin API applies to existing credentials at their next request, and a role taken away is gone", async () => {
    expect(await statuses()).toEqual(expected(false));
    const denied = await send(creds.token, "GET", "/drafts");
    expect(denied.body).toEqual(DENIED_READ);

    expect((await t.admin("PATCH", `/api/v1/admin/users/${userId}`, { roles: ["writer", "editor"] })).status).toBe(200);
    expect(await statuses()).toEqual(expected(true));

    expect((await t.admin("PATCH", `/api/v1/admin/users/${userId}`, { roles: ["writer"] })).status).toBe(200);
    expect(await statuses()).toEqual(expected(false));
    expect((await send(creds.key, "GET", "/drafts")).body).toEqual(DENIED_READ);
  });

  test("the principal carries the user's roles, metadata and address as stored at the request, not the token's copy", async () => {
    const token = (creds.token as { token: string }).token;
    const at = () => resolvePrincipal(t.ctx, { authorization: `Bearer ${token}` }, { allowApiKey: true, ip: () => "127.0.0.1" });
    expect((await t.admin("PATCH", `/api/v1/admin/users/${userId}`, { roles: ["editor"], metadata: { plan: "pro", team: { id: 7 } }, is_verified: true })).status).toBe(200);
    expect(await at()).toMatchObject({ kind: "user", userId, roles: ["editor"], metadata: { plan: "pro", team: { id: 7 } }, email: "ed@example.com", verified: true });
    expect((await t.admin("PATCH", `/api/v1/admin/users/${userId}`, { roles: [], metadata: {} })).status).toBe(200);
    expect(await at()).toMatchObject({ kind: "user", userId, roles: [], metadata: {} });
  });
});
