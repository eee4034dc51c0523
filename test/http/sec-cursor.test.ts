import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// A cursor (`after=<id>`) is read under the same visibility as the page it continues: another
// user's record under an owner read rule, or a soft-deleted one, is 400 like an unknown id.

let t: TestApp;
let alice: string;
let bob: string;
let aliceIds: string[];
let bobId: string;
let goneId: string;

const unknown = { error: "invalid cursor: no record with that id in this listing", code: "bad_request" };

beforeAll(async () => {
  t = createTestApp();
  alice = (await registerUser(t, "alice@example.com")).token;
  bob = (await registerUser(t, "bob@example.com")).token;
  const made = await t.admin("POST", "/api/v1/admin/collections", {
    name: "priv",
    rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" },
  });
  expect(made.status).toBe(201);
  aliceIds = [];
  for (const n of [10, 20, 30, 40]) {
    const res = await t.req("POST", "/api/v1/priv", { body: { n }, token: alice });
    expect(res.status).toBe(201);
    aliceIds.push(res.body._id);
  }
  const b = await t.req("POST", "/api/v1/priv", { body: { n: 25 }, token: bob });
  bobId = b.body._id;
  const gone = await t.req("POST", "/api/v1/priv", { body: { n: 35 }, token: alice });
  goneId = gone.body._id;
  expect((await t.req("DELETE", `/api/v1/priv/${goneId}`, { token: alice })).status).toBe(200);
});
afterAll(() => t.close());

describe("after= under an owner read rule", () => {
  test("another user's record id as the cursor is 400 exactly like an unknown id", async () => {
    const hidden = await t.req("GET", `/api/v1/priv?after=${bobId}&sort=n&fields=n`, { token: alice });
    const none = await t.req("GET", "/api/v1/priv?after=zzzzzzzzzzzzzzzzzzzz&sort=n&fields=n", { token: alice });
    expect(none.status).toBe(400);
    expect(none.body).toEqual(unknown);
    expect(hidden.status).toBe(400);
    expect(hidden.body).toEqual(unknown);
  });

  test("the same with the default order and with a descending sort", async () => {
    for (const q of [`after=${bobId}`, `after=${bobId}&sort=-n`, `after=${bobId}&sort=n&limit=1`]) {
      const res = await t.req("GET", `/api/v1/priv?${q}`, { token: alice });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(unknown);
    }
  });

  test("a soft-deleted record is no cursor unless include_deleted=true shows it", async () => {
    const res = await t.req("GET", `/api/v1/priv?after=${goneId}&sort=n`, { token: alice });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unknown);
    const shown = await t.req("GET", `/api/v1/priv?after=${goneId}&sort=n&include_deleted=true&fields=n`, { token: alice });
    expect(shown.status).toBe(200);
    expect(shown.body.items.map((r: { n: number }) => r.n)).toEqual([40]);
  });

  test("the owner's own records page as before", async () => {
    const res = await t.req("GET", `/api/v1/priv?after=${aliceIds[1]}&sort=n&fields=n`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [{ _id: aliceIds[2], n: 30 }, { _id: aliceIds[3], n: 40 }], next_cursor: null, total: null });
    const first = await t.req("GET", "/api/v1/priv?sort=n&limit=2&fields=n", { token: alice });
    expect(first.body.next_cursor).toBe(aliceIds[1]);
  });

  test("the admin sees every record and may page from any of them", async () => {
    const res = await t.admin("GET", `/api/v1/priv?after=${bobId}&sort=n&fields=n`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: { n: number }) => r.n)).toEqual([30, 40]);
  });
});
