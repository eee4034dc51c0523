import { afterEach, expect, test } from "bun:test";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// How an expression rule's refusal answers (CONTRACT §12, §1): a denied create 403; update and delete 404
// where the caller may not read the record, else 403; an anonymous caller gets 401 only where the rule reads
// `@auth` (signing in may change its answer), 403 where no user could pass it either.

let t: TestApp;
afterEach(() => t?.close());

test("a rule that does not read @auth refuses an anonymous caller 403, as a user", async () => {
  t = createTestApp();
  await createCollection(t, "drafts", { read: "public", create: `@request.body.status = "draft"`, update: `@request.body.status = "draft"`, delete: "@now < 0" });
  const user = await registerUser(t, "drafts@example.com");
  const rec = (await t.req("POST", "/api/v1/drafts", { body: { status: "draft" } })).body;
  for (const token of [undefined, user.token]) {
    const create = await t.req("POST", "/api/v1/drafts", { body: { status: "published" }, token });
    expect({ status: create.status, code: create.body.code }).toEqual({ status: 403, code: "forbidden" });
    expect((await t.req("PATCH", `/api/v1/drafts/${rec._id}`, { body: { status: "published" }, token })).status).toBe(403);
    expect((await t.req("DELETE", `/api/v1/drafts/${rec._id}`, { token })).status).toBe(403);
  }
  expect((await t.req("POST", "/api/v1/drafts", { body: { status: "draft" } })).status).toBe(201);
});

test("a rule that reads @auth: anonymous 401, a user it refuses 403, and 404 where the user may not read the record", async () => {
  t = createTestApp();
  await createCollection(t, "memos", { read: "_owner_id = @auth.id", create: "@auth.id != null", update: `@auth.roles ?= "editor"`, delete: `@auth.roles ?= "editor"` });
  const ann = await registerUser(t, "ann-memos@example.com");
  const bob = await registerUser(t, "bob-memos@example.com");
  const memo = (await t.req("POST", "/api/v1/memos", { body: { text: "ann's" }, token: ann.token })).body;
  expect((await t.req("POST", "/api/v1/memos", { body: { text: "anon" } })).status).toBe(401);
  // An anonymous update of a record it may not read: 404 (nothing said about the record), not 401.
  expect((await t.req("PATCH", `/api/v1/memos/${memo._id}`, { body: { text: "x" } })).status).toBe(404);
  // Ann reads her memo: the update rule refuses her, 403. Bob may not read it: 404, as if it were not there.
  expect((await t.req("PATCH", `/api/v1/memos/${memo._id}`, { body: { text: "x" }, token: ann.token })).status).toBe(403);
  expect((await t.req("DELETE", `/api/v1/memos/${memo._id}`, { token: ann.token })).status).toBe(403);
  expect((await t.req("PATCH", `/api/v1/memos/${memo._id}`, { body: { text: "x" }, token: bob.token })).status).toBe(404);
  expect((await t.req("DELETE", `/api/v1/memos/${memo._id}`, { token: bob.token })).status).toBe(404);
  expect((await t.req("PATCH", `/api/v1/memos/01ARZ3NDEKTSV4RRFFQ69G5FAV`, { body: { text: "x" }, token: bob.token })).status).toBe(404);
  // In a batch, the same: what Bob may not read fails it as a missing record, what Ann reads as refused.
  const hidden = await t.req("POST", "/api/v1/memos/batch", { body: { operations: [{ op: "update", id: memo._id, data: { text: "x" } }] }, token: bob.token });
  const missing = await t.req("POST", "/api/v1/memos/batch", { body: { operations: [{ op: "update", id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", data: { text: "x" } }] }, token: bob.token });
  expect(hidden.body.code).toBe("batch_failed");
  expect(hidden.body.error).toContain("not found");
  expect(hidden.body.error.replace(memo._id, "ID")).toBe(missing.body.error.replace("01ARZ3NDEKTSV4RRFFQ69G5FAV", "ID"));
  const refused = await t.req("POST", "/api/v1/memos/batch", { body: { operations: [{ op: "update", id: memo._id, data: { text: "x" } }] }, token: ann.token });
  expect(refused.body.code).toBe("batch_failed");
  expect(refused.body.error).not.toContain("not found");
  expect((await t.req("GET", `/api/v1/memos/${memo._id}`, { token: ann.token })).body.text).toBe("ann's");
});
