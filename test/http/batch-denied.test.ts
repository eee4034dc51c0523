import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// A batch `delete` of a record the caller may not delete fails the whole batch with 400
// `batch_failed` naming that operation (CONTRACT §4), and nothing the batch did survives.

let t: TestApp;
let ann: { token: string; id: string };
let bob: { token: string; id: string };

beforeEach(async () => {
  t = createTestApp();
  ann = await registerUser(t, "ann@example.com");
  bob = await registerUser(t, "bob@example.com");
});
afterEach(() => t.close());

async function collection(name: string, rules: Record<string, unknown>) {
  const res = await t.admin("POST", "/api/v1/admin/collections", { name, rules });
  expect(res.status).toBe(201);
}

async function create(name: string, token: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.req("POST", `/api/v1/${name}`, { token, body });
  expect(res.status).toBe(201);
  return res.body._id;
}

/** Every record of the collection as the admin sees it, soft-deleted ones included. */
async function snapshot(name: string) {
  const res = await t.admin("GET", `/api/v1/${name}?include_deleted=true&limit=500`);
  expect(res.status).toBe(200);
  return res.body.items;
}

/** CONTRACT §4's failure body for operation `index`. */
function expectBatchFailed(res: { status: number; body: unknown }, index: number, op: string, reason: string) {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ error: `operation ${index} (${op}): ${reason}`, code: "batch_failed", index, op });
}

const cases: { name: string; rules: Record<string, unknown>; status: string; reason: (col: string) => string }[] = [
  {
    name: "owner rule, record readable by the caller",
    rules: { read: "authenticated", create: "authenticated", update: "owner", delete: "owner" },
    status: "403",
    reason: () => "only the owner may delete this record",
  },
  {
    name: "owner rule, record hidden by an owner read rule",
    rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" },
    status: "404",
    reason: () => "record not found",
  },
  {
    name: "role rule the caller lacks",
    rules: { read: "authenticated", create: "authenticated", update: "owner", delete: { role: "moderator" } },
    status: "403",
    reason: (col) => `"delete" on collection "${col}" requires the role "moderator"`,
  },
  {
    name: "disabled delete rule",
    rules: { read: "authenticated", create: "authenticated", update: "owner", delete: "disabled" },
    status: "403",
    reason: (col) => `"delete" is disabled on collection "${col}"`,
  },
];

describe("a batch that deletes a record the caller may not delete", () => {
  for (const c of cases) {
    test(`${c.name}: 400 batch_failed naming the delete, and nothing of the batch survives`, async () => {
      const col = "notes";
      await collection(col, c.rules);
      const mine = await create(col, ann.token, { title: "mine" });
      const theirs = await create(col, bob.token, { title: "theirs" });
      // The single call answers the same way (the batch carries its message).
      const single = await t.req("DELETE", `/api/v1/${col}/${theirs}`, { token: ann.token });
      expect(single.status).toBe(Number(c.status));
      expect(single.body.error).toBe(c.reason(col));
      const before = await snapshot(col);

      const ops = [
        { op: "create", data: { title: "created in the batch" } },
        { op: "update", id: mine, data: { title: "changed in the batch" } },
        { op: "delete", id: theirs },
        { op: "create", data: { title: "never reached" } },
      ];
      const res = await t.req("POST", `/api/v1/${col}/batch`, { token: ann.token, body: { operations: ops } });
      expectBatchFailed(res, 2, "delete", c.reason(col));
      expect(await snapshot(col)).toEqual(before);
      const other = await t.req("GET", `/api/v1/${col}/${theirs}`, { token: bob.token });
      expect(other.status).toBe(200);
      expect(other.body._deleted_at).toBeNull();
    });
  }

  test("a delete of the caller's own record before the denied one is rolled back too", async () => {
    await collection("notes", { read: "authenticated", create: "authenticated", update: "owner", delete: "owner" });
    const mine = await create("notes", ann.token, { title: "mine" });
    const theirs = await create("notes", bob.token, { title: "theirs" });
    const before = await snapshot("notes");
    const res = await t.req("POST", "/api/v1/notes/batch", {
      token: ann.token,
      body: { operations: [{ op: "delete", id: mine }, { op: "delete", id: theirs }] },
    });
    expectBatchFailed(res, 1, "delete", "only the owner may delete this record");
    expect(await snapshot("notes")).toEqual(before);
    expect((await t.req("GET", `/api/v1/notes/${mine}`, { token: ann.token })).body._deleted_at).toBeNull();
  });

  test("anonymous: a delete under an owner rule fails the batch with the 401's message", async () => {
    await collection("notes", { read: "public", create: "public", update: "public", delete: "owner" });
    const theirs = await create("notes", bob.token, { title: "theirs" });
    const before = await snapshot("notes");
    const res = await t.req("POST", "/api/v1/notes/batch", {
      body: { operations: [{ op: "create", data: { title: "anon" } }, { op: "delete", id: theirs }] },
    });
    expectBatchFailed(res, 1, "delete", '"delete" on collection "notes" requires authentication');
    expect(await snapshot("notes")).toEqual(before);
  });

  test("the owner's own batch delete of the same record succeeds", async () => {
    await collection("notes", { read: "authenticated", create: "authenticated", update: "owner", delete: "owner" });
    const theirs = await create("notes", bob.token, { title: "theirs" });
    const res = await t.req("POST", "/api/v1/notes/batch", { token: bob.token, body: { operations: [{ op: "delete", id: theirs }] } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ results: [{ op: "delete", id: theirs }] });
  });
});
