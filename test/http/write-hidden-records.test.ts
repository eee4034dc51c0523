import { expect, test } from "bun:test";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";

// A record the requester may not read is 404 on every write, whatever the update or delete rule allows
// (CONTRACT §1: "a record the requester may not read (do not reveal it exists)"); the answer never carries it.

const t = appPerTest();

async function secretOf(rules: Record<string, unknown>) {
  await createCollection(t, "notes", rules);
  const alice = await registerUser(t, "alice@example.com");
  const bob = await registerUser(t, "bob@example.com");
  const created = await t.req("POST", "/api/v1/notes", { token: alice.token, body: { secret: "s3cret" } });
  expect(created.status).toBe(201);
  return { alice, bob, id: created.body._id as string };
}

const NOT_FOUND = { status: 404, code: "not_found" };
const outcome = (r: { status: number; body: { code?: string } }) => ({ status: r.status, code: r.body.code });

test("read owner, writes open to any user: another user's PATCH, DELETE and restore are 404, and change nothing", async () => {
  const { alice, bob, id } = await secretOf({ read: "owner", create: "authenticated", update: "authenticated", delete: "authenticated" });
  for (const [method, path, body] of [
    ["PATCH", `/api/v1/notes/${id}`, {}],
    ["PATCH", `/api/v1/notes/${id}`, { secret: "mine now" }],
    ["DELETE", `/api/v1/notes/${id}`, undefined],
  ] as const) {
    const res = await t.req(method, path, { token: bob.token, body });
    expect(outcome(res)).toEqual(NOT_FOUND);
    expect(res.text).not.toContain("s3cret");
  }
  const batch = await t.req("POST", "/api/v1/notes/batch", { token: bob.token, body: { operations: [{ op: "update", id, data: { secret: "x" } }] } });
  expect(batch.status).toBe(400);
  expect(batch.body).toMatchObject({ code: "batch_failed", index: 0, op: "update" });
  expect(batch.text).not.toContain("s3cret");
  expect((await t.req("GET", `/api/v1/notes/${id}`, { token: alice.token })).body.secret).toBe("s3cret");

  // Soft-deleted by its owner: another user's restore is 404 too.
  expect((await t.req("DELETE", `/api/v1/notes/${id}`, { token: alice.token })).status).toBe(200);
  const restore = await t.req("POST", `/api/v1/notes/${id}/restore`, { token: bob.token });
  expect(outcome(restore)).toEqual(NOT_FOUND);
  expect(restore.text).not.toContain("s3cret");
});

test("read disabled, update and delete public: an anonymous write is 404; the admin still writes", async () => {
  const { id } = await secretOf({ read: "disabled", create: "authenticated", update: "public", delete: "public" });
  expect(outcome(await t.req("PATCH", `/api/v1/notes/${id}`, { body: {} }))).toEqual(NOT_FOUND);
  expect(outcome(await t.req("DELETE", `/api/v1/notes/${id}`))).toEqual(NOT_FOUND);
  const admin = await t.admin("PATCH", `/api/v1/notes/${id}`, { secret: "changed" });
  expect(admin.status).toBe(200);
  expect(admin.body.secret).toBe("changed");
});

test("a readable record another user may not write is still 403", async () => {
  const { bob, id } = await secretOf({ read: "public", create: "authenticated", update: "owner", delete: "owner" });
  const res = await t.req("PATCH", `/api/v1/notes/${id}`, { token: bob.token, body: { secret: "x" } });
  expect(res.status).toBe(403);
  expect(res.body.code).toBe("forbidden");
});
