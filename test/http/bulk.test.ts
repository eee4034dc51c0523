import { describe, expect, test } from "bun:test";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";
import { columnNames, countRows } from "../helpers/schema.ts";

let user: { token: string; id: string };

// Every test gets its own app with three collections and a signed-in user.
const t = appPerTest(async (t) => {
  for (const name of ["items", "ruled", "typed"]) await createCollection(t, name);
  await t.admin("PUT", "/api/v1/admin/collections/ruled/rules", { field_rules: [{ field: "title", required: true, min: 3 }] });
  user = await registerUser(t, "bulk@example.com");
});

const bulk = (name: string, body: unknown, token?: string) => t.req("POST", `/api/v1/${name}/bulk`, { body, token });
const adminBulk = (name: string, body: unknown) => t.admin("POST", `/api/v1/${name}/bulk`, body);

describe("POST /:collection/bulk", () => {
  test("500 records are created in one call, in order, owned by the requester", async () => {
    const records = Array.from({ length: 500 }, (_, i) => ({ n: i, label: `item ${i}` }));
    const res = await bulk("items", records, user.token);
    expect(res.status).toBe(201);
    expect(res.body).toHaveLength(500);
    expect(res.body[0]).toMatchObject({ n: 0, label: "item 0", _owner_id: user.id, _deleted_at: null });
    expect(res.body[499].n).toBe(499);
    expect(new Set(res.body.map((r: { _id: string }) => r._id)).size).toBe(500);
    expect(await countRows(t, "items")).toBe(500);
  });

  test("501 records is a 400 and saves nothing", async () => {
    const before = await countRows(t, "items");
    const res = await bulk("items", Array.from({ length: 501 }, () => ({ n: 1 })), user.token);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
    expect(await countRows(t, "items")).toBe(before);
  });

  test("an empty array is a 400", async () => {
    expect((await bulk("items", [], user.token)).status).toBe(400);
  });

  test("a body that is not an array is a 400", async () => {
    const res = await bulk("items", { n: 1 }, user.token);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
  });

  test("an element that is not an object is a 400 naming its index", async () => {
    const res = await bulk("items", [{ n: 1 }, "x"], user.token);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "record 1 must be a JSON object", code: "bad_request", index: 1 });
  });

  test("the create rule applies: anonymous is 401", async () => {
    expect((await bulk("items", [{ n: 1 }])).status).toBe(401);
  });

  test("an unknown collection is a 404", async () => {
    expect((await adminBulk("nowhere", [{ n: 1 }])).status).toBe(404);
  });

  test("a field-rule failure is a 422 with the index on the body and every error, and nothing is saved", async () => {
    const res = await adminBulk("ruled", [{ title: "good one" }, { title: "fine" }, { title: "no" }, { title: null }]);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      errors: [{ field: "title", rule: "min", message: '"title" must be at least 3 characters.', index: 2 }],
      index: 2,
    });
    expect(await countRows(t, "ruled")).toBe(0);
  });

  test("a failure rolls back the columns earlier records added, in the table and in the catalog", async () => {
    const res = await adminBulk("typed", [{ fresh: "text", other: 1 }, { other: "not a number" }]);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      errors: [{ field: "other", rule: "type", message: '"other" must be a number.', index: 1 }],
      index: 1,
    });
    expect(await countRows(t, "typed")).toBe(0);
    expect(await columnNames(t, "typed")).not.toContain("fresh");
    expect(await columnNames(t, "typed")).not.toContain("other");
    const col = await t.admin("GET", "/api/v1/admin/collections/typed");
    expect(col.body.fields).toEqual([]);
    // The cache holds no ghost column: the same names can now take other types.
    const again = await t.admin("POST", "/api/v1/typed", { fresh: 5, other: "text now" });
    expect(again.status).toBe(201);
    expect((await t.admin("GET", "/api/v1/admin/collections/typed")).body.fields).toEqual([
      { name: "fresh", type: "number" },
      { name: "other", type: "text" },
    ]);
  });

  test("records later in the batch see columns added by earlier ones", async () => {
    const res = await adminBulk("typed", [{ a1: 1 }, { a1: 2, b1: true }, { b1: false, c1: { x: 1 } }]);
    expect(res.status).toBe(201);
    expect(res.body[2]).toMatchObject({ a1: null, b1: false, c1: { x: 1 } });
  });

  test("after a record that adds a field, later failures still name their own index", async () => {
    // The growth record itself breaks a field rule: its own index.
    let res = await adminBulk("ruled", [{ title: "good" }, { title: "no", fresh: 1 }, { title: "fine" }]);
    expect(res.status).toBe(422);
    expect(res.body.index).toBe(1);
    expect(res.body.errors).toEqual([{ field: "title", rule: "min", message: '"title" must be at least 3 characters.', index: 1 }]);
    // A record after the growth breaks the new field's type.
    res = await adminBulk("typed", [{ a: 1 }, { a: 2 }, { b: "x" }, { a: 3, b: "y" }, { b: 5 }, { a: 4 }]);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ errors: [{ field: "b", rule: "type", message: '"b" must be a string.', index: 4 }], index: 4 });
    expect(await countRows(t, "typed")).toBe(0);
    expect(await columnNames(t, "typed")).not.toContain("b");
    // The same without the bad record: every record stored as sent, in order, the growth at the last index too.
    const events: Record<string, unknown>[] = [];
    const stop = t.ctx.events.subscribe((e) => events.push(e.record));
    res = await adminBulk("typed", [{ a: 1 }, { a: 2 }, { b: "x" }, { a: 3, b: "y" }, { a: 4 }, { c: true }]);
    stop();
    expect(res.status).toBe(201);
    // Their change events carry the records as stored too.
    expect(events).toEqual(res.body);
    expect(res.body.map((r: Record<string, unknown>) => [r.a, r.b, r.c])).toEqual([
      [1, null, null],
      [2, null, null],
      [null, "x", null],
      [3, "y", null],
      [4, null, null],
      [null, null, true],
    ]);
    // Each as a read answers it, the fields later records added included (null), in the same key order.
    const listed = await t.admin("GET", "/api/v1/typed?sort=_id&limit=10");
    expect(res.body).toEqual(listed.body.items);
    expect(Object.keys(res.body[0])).toEqual(Object.keys(listed.body.items[0]));
  });

  test("into a collection with a relation, a field the last record adds is null on those before it, answer and events", async () => {
    await createCollection(t, "authors");
    const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: "typed", from_field: "author", to_col: "authors", type: "one" });
    expect(rel.status).toBe(201);
    const events: Record<string, unknown>[] = [];
    const stop = t.ctx.events.subscribe((e) => events.push(e.record));
    const res = await adminBulk("typed", [{ a: 1 }, { a: 2, late: "x" }]);
    stop();
    expect(res.status).toBe(201);
    expect(res.body.map((r: Record<string, unknown>) => [r.a, r.late])).toEqual([
      [1, null],
      [2, "x"],
    ]);
    expect(events).toEqual(res.body);
    const listed = await t.admin("GET", "/api/v1/typed?sort=_id&limit=10");
    expect(res.body).toEqual(listed.body.items);
  });

  test("a unique violation names the index and saves nothing", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "uniq" });
    await t.admin("POST", "/api/v1/uniq", { email: "a@x.io" });
    await t.db.exec(`CREATE UNIQUE INDEX "uniq_email_test" ON "uniq" ("email")`);
    const res = await adminBulk("uniq", [{ email: "b@x.io" }, { email: "a@x.io" }]);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "unique_violation", index: 1 });
    expect(await countRows(t, "uniq")).toBe(1);
  });
});

describe("POST /:collection/bulk with hooks loaded", () => {
  // An afterCreate hook refuses records titled "boom".
  const h = appPerTest(
    async (h) => {
      await createCollection(h, "hooked");
      // An index needs its field to exist: a first record makes it.
      expect((await h.admin("POST", "/api/v1/hooked", { code: "seed", title: "seed" })).status).toBe(201);
      const index = await h.admin("POST", "/api/v1/admin/collections/hooked/indexes", { fields: ["code"], unique: true });
      expect(index.status).toBe(201);
    },
    {
      context: {
        hooks: {
          list: [
            {
              collection: "hooked",
              afterCreate: (e) => {
                if (e.record?.title === "boom") throw new Error("no boom");
              },
            },
          ],
        },
      },
    },
  );

  test("a row that breaks a unique index fails with its index before the hooks of the records after it", async () => {
    const res = await h.admin("POST", "/api/v1/hooked/bulk", [
      { code: "x", title: "a" },
      { code: "x", title: "b" },
      { code: "y", title: "boom" },
    ]);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "unique_violation", index: 1 });
    expect(await countRows(h, "hooked")).toBe(1);
  });
});
