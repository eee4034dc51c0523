import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";
import { columnNames, countRows } from "../helpers/schema.ts";

const t = createTestApp();
afterAll(() => t.close());

const batch = (name: string, body: unknown, token?: string) => t.req("POST", `/api/v1/${name}/batch`, { body, token });

let alice: { token: string; id: string };
let bob: { token: string; id: string };

beforeAll(async () => {
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "notes" })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "ruled" })).status).toBe(201);
  await t.admin("PUT", "/api/v1/admin/collections/ruled/rules", { field_rules: [{ field: "title", required: true }] });
  alice = await registerUser(t, "alice@example.com");
  bob = await registerUser(t, "bob@example.com");
});

describe("POST /:collection/batch", () => {
  test("create, update and delete run in order and return one result each", async () => {
    const a = await t.req("POST", "/api/v1/notes", { body: { text: "a" }, token: alice.token });
    const b = await t.req("POST", "/api/v1/notes", { body: { text: "b" }, token: alice.token });
    const res = await batch(
      "notes",
      {
        operations: [
          { op: "create", data: { text: "c" } },
          { op: "update", id: a.body._id, data: { text: "a2" } },
          { op: "delete", id: b.body._id },
        ],
      },
      alice.token,
    );
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(3);
    expect(res.body.results[0]).toEqual({ op: "create", record: expect.objectContaining({ text: "c", _owner_id: alice.id }) });
    expect(res.body.results[1]).toEqual({ op: "update", record: expect.objectContaining({ _id: a.body._id, text: "a2" }) });
    expect(res.body.results[2]).toEqual({ op: "delete", id: b.body._id });
    expect((await t.req("GET", `/api/v1/notes/${b.body._id}`)).status).toBe(404);
  });

  test("each operation sees the ones before: an update after a delete of the same record fails", async () => {
    const a = await t.req("POST", "/api/v1/notes", { body: { text: "x" }, token: alice.token });
    const res = await batch(
      "notes",
      { operations: [{ op: "delete", id: a.body._id }, { op: "create", data: { text: "y" } }, { op: "update", id: a.body._id, data: { text: "z" } }] },
      alice.token,
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "operation 2 (update): record not found", code: "batch_failed", index: 2, op: "update" });
    // Nothing survived: the record is still active and unchanged.
    expect((await t.req("GET", `/api/v1/notes/${a.body._id}`)).body).toMatchObject({ text: "x", _deleted_at: null });
  });

  test("a failure in the last operation rolls back the creates before it, their new columns included", async () => {
    const before = await countRows(t, "notes");
    const res = await batch(
      "notes",
      {
        operations: [
          { op: "create", data: { text: "1", brandnew: 1 } },
          { op: "create", data: { text: "2" } },
          { op: "update", id: "01NOSUCHRECORD0000000000000", data: { text: "3" } },
        ],
      },
      alice.token,
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "operation 2 (update): record not found", code: "batch_failed", index: 2, op: "update" });
    expect(await countRows(t, "notes")).toBe(before);
    expect(await columnNames(t, "notes")).not.toContain("brandnew");
    expect((await t.admin("GET", "/api/v1/admin/collections/notes")).body.fields.map((f: { name: string }) => f.name)).not.toContain("brandnew");
  });

  test("access rules apply per operation with the requester's identity", async () => {
    const mine = await t.req("POST", "/api/v1/notes", { body: { text: "alice's" }, token: alice.token });
    const res = await batch(
      "notes",
      { operations: [{ op: "create", data: { text: "bob's" } }, { op: "update", id: mine.body._id, data: { text: "hijack" } }] },
      bob.token,
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.stringMatching(/^operation 1 \(update\): /),
      code: "batch_failed",
      index: 1,
      op: "update",
    });
    expect((await t.req("GET", `/api/v1/notes/${mine.body._id}`)).body.text).toBe("alice's");
    const anon = await batch("notes", { operations: [{ op: "create", data: { text: "anon" } }] });
    expect(anon.status).toBe(400);
    expect(anon.body).toMatchObject({ code: "batch_failed", index: 0, op: "create" });
  });

  test("a validation failure inside a batch is batch_failed naming the op and the reason", async () => {
    const res = await batch("ruled", { operations: [{ op: "create", data: { title: "ok" } }, { op: "create", data: { body: "no title" } }] }, alice.token);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'operation 1 (create): "title" is required.', code: "batch_failed", index: 1, op: "create" });
    expect(await countRows(t, "ruled")).toBe(0);
  });

  test("0 or 101 operations, or a body without operations, is a 400 bad_request", async () => {
    for (const body of [{ operations: [] }, { operations: Array.from({ length: 101 }, () => ({ op: "create", data: {} })) }, {}, [], { operations: "x" }]) {
      const res = await batch("notes", body, alice.token);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
    }
  });

  test("100 operations are accepted", async () => {
    const res = await batch("notes", { operations: Array.from({ length: 100 }, (_, i) => ({ op: "create", data: { i } })) }, alice.token);
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(100);
  });

  test("a malformed operation fails the batch naming its index", async () => {
    const cases: [unknown, string][] = [
      [{ op: "upsert", data: {} }, "upsert"],
      [{ op: "update", data: {} }, "update"],
      [{ op: "create" }, "create"],
      ["create", "unknown"],
    ];
    for (const [op, name] of cases) {
      const res = await batch("notes", { operations: [{ op: "create", data: { text: "k" } }, op] }, alice.token);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: "batch_failed", index: 1, op: name });
      expect(res.body.error).toStartWith(`operation 1 (${name}): `);
    }
  });

  test("an unknown collection is a 404", async () => {
    expect((await batch("nowhere", { operations: [{ op: "create", data: {} }] }, alice.token)).status).toBe(404);
  });
});

describe("the size of a batch's answer", () => {
  test("results past 64 MiB fail the batch (400 batch_failed) and keep nothing; below it they are answered", async () => {
    const big = await t.admin("POST", "/api/v1/notes", { text: "x".repeat(4 * 1024 * 1024) });
    expect(big.status).toBe(201);
    const id = big.body._id;
    // Each update answers the whole record, a little over 4 MiB: the 16th passes 64 MiB.
    const ops = (n: number) => Array.from({ length: n }, (_, i) => ({ op: "update", id, data: { n: i } }));
    const over = await t.admin("POST", "/api/v1/notes/batch", { operations: ops(20) });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ code: "batch_failed", index: 15, op: "update" });
    expect(over.body.error).toContain("larger than 64 MiB");
    expect((await t.admin("GET", `/api/v1/notes/${id}`)).body.n ?? null).toBeNull();
    const fits = await t.admin("POST", "/api/v1/notes/batch", { operations: ops(15) });
    expect(fits.status).toBe(200);
    expect(fits.body.results).toHaveLength(15);
    expect((await t.admin("GET", `/api/v1/notes/${id}`)).body.n).toBe(14);
  });
});
