import { beforeEach, describe, expect, test } from "bun:test";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";

// Every test gets its own app with an "items" collection; tests that need a signed-in owner register one.
const t = appPerTest((t) => createCollection(t, "items", { create: "public", update: "public", delete: "public" }));
const owner = () => registerUser(t, "owner@example.com");

const ID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/;

const create = async (body: unknown, token?: string) => t.req("POST", "/api/v1/items", { body, token });

describe("POST /:collection", () => {
  test("creates a record: 201 with its system fields and values", async () => {
    const user = await owner();
    const now = t.clock.now();
    const res = await create({ title: "hello", n: 3, done: false, tags: ["a"], meta: { k: 1 } }, user.token);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      _id: expect.stringMatching(ID_RE),
      _created_at: now,
      _updated_at: now,
      _owner_id: user.id,
      _deleted_at: null,
      title: "hello",
      n: 3,
      done: false,
      tags: ["a"],
      meta: { k: 1 },
    });
  });

  test("an anonymous create under a public rule has _owner_id null, and fields it did not set are null", async () => {
    await create({ title: "first", n: 1, tags: ["a"] });
    const res = await create({ title: "anon" });
    expect(res.status).toBe(201);
    expect(res.body._owner_id).toBeNull();
    expect(res.body.n).toBeNull();
    expect(res.body.tags).toBeNull();
  });

  test("system fields in the body are ignored", async () => {
    const user = await owner();
    const res = await create(
      { _id: "MYID", _created_at: 1, _updated_at: 2, _owner_id: "someone", _deleted_at: 3, _other: "x", title: "sys" },
      user.token,
    );
    expect(res.status).toBe(201);
    expect(res.body._id).not.toBe("MYID");
    expect(res.body._id).toMatch(ID_RE);
    expect(res.body._created_at).toBe(t.clock.now());
    expect(res.body._owner_id).toBe(user.id);
    expect(res.body._deleted_at).toBeNull();
    expect(res.body._other).toBeUndefined();
  });

  test("record ids grow with creation order", async () => {
    const a = await create({ title: "1" });
    const b = await create({ title: "2" });
    expect(b.body._id > a.body._id).toBe(true);
  });

  test("an empty object creates a record with only system fields set", async () => {
    await create({ title: "first" });
    const res = await create({});
    expect(res.status).toBe(201);
    expect(res.body.title).toBeNull();
  });

  test.each([
    ["an array", [{ title: "x" }]],
    ["a string", '"text"'],
    ["a number", "42"],
    ["null", "null"],
    ["an empty body", ""],
  ])("a body that is %s is 400 bad_request", async (_n, body) => {
    const res = await t.req("POST", "/api/v1/items", { body, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
  });

  test.each([["{"], ['{"title": }'], ["{'a':1}"], ["[1,"]])("malformed JSON %p is 400 invalid_json", async (body) => {
    const res = await t.req("POST", "/api/v1/items", { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), code: "invalid_json" });
  });

  test("a record sent to an unknown collection is 404 not_found", async () => {
    const res = await t.admin("POST", "/api/v1/ghosts", { a: 1 });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: "not_found" });
  });
});

describe("types", () => {
  beforeEach(async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "typed", rules: { create: "public", update: "public" } });
    await t.req("POST", "/api/v1/typed", { body: { n: 1, s: "a", b: true, j: { x: 1 }, later: null } });
  });

  test.each([
    ["n", "one", "\"n\" must be a number."],
    ["n", true, "\"n\" must be a number."],
    ["s", 1, "\"s\" must be a string."],
    ["b", "yes", "\"b\" must be a boolean."],
    ["j", 5, "\"j\" must be an object or array."],
  ])("a %s of another type is 422 rule type", async (field, value, message) => {
    const res = await t.req("POST", "/api/v1/typed", { body: { [field]: value } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ errors: [{ field, rule: "type", message }] });
  });

  test("every type error of a body is listed", async () => {
    const res = await t.req("POST", "/api/v1/typed", { body: { n: "x", s: 2 } });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(["n", "s"]);
  });

  test("a type mismatch on update is 422 too and changes nothing", async () => {
    const rec = await t.req("POST", "/api/v1/typed", { body: { n: 2 } });
    const res = await t.req("PATCH", `/api/v1/typed/${rec.body._id}`, { body: { n: "two", s: "ok" } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ errors: [{ field: "n", rule: "type", message: "\"n\" must be a number." }] });
    expect((await t.req("GET", `/api/v1/typed/${rec.body._id}`)).body.s).toBeNull();
  });

  test("null is allowed in any field, and a field first seen as null takes its type from the first value", async () => {
    const a = await t.req("POST", "/api/v1/typed", { body: { n: null, s: null, b: null, j: null } });
    expect(a.status).toBe(201);
    const col = (await t.admin("GET", "/api/v1/admin/collections/typed")).body;
    expect(col.fields.map((f: { name: string }) => f.name)).not.toContain("later");
    expect((await t.req("POST", "/api/v1/typed", { body: { later: 7 } })).status).toBe(201);
    const again = await t.req("POST", "/api/v1/typed", { body: { later: "seven" } });
    expect(again.status).toBe(422);
    expect(again.body.errors[0]).toEqual({ field: "later", rule: "type", message: "\"later\" must be a number." });
  });

  test("booleans come back as true/false and json fields parsed", async () => {
    const rec = await t.req("POST", "/api/v1/typed", { body: { b: false, j: [1, { y: "z" }] } });
    const got = await t.req("GET", `/api/v1/typed/${rec.body._id}`);
    expect(got.body.b).toBe(false);
    expect(got.body.j).toEqual([1, { y: "z" }]);
  });

  test("a value of a field created inside a rejected body does not create the field", async () => {
    const res = await t.req("POST", "/api/v1/typed", { body: { fresh: 1, n: "bad" } });
    expect(res.status).toBe(422);
    const col = (await t.admin("GET", "/api/v1/admin/collections/typed")).body;
    expect(col.fields.map((f: { name: string }) => f.name)).not.toContain("fresh");
  });

  test.each([["1abc"], ["has space"], ["has-dash"], ["a".repeat(65)], ["ünï"], ['x"); DROP TABLE _users; --']])(
    "the field name %p is 422 rule name",
    async (name) => {
      const res = await t.req("POST", "/api/v1/typed", { body: { [name]: 1 } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ field: name, rule: "name", message: expect.any(String) }]);
    },
  );

  test("a field name that differs only in letter case from a known one is 422 rule name", async () => {
    const res = await t.req("POST", "/api/v1/typed", { body: { N: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].rule).toBe("name");
  });

  test("more than 500 user fields is 422 rule fields", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "wide", rules: { create: "public" } });
    const first: Record<string, number> = {};
    for (let i = 0; i < 500; i++) first[`f${i}`] = i;
    expect((await t.req("POST", "/api/v1/wide", { body: first })).status).toBe(201);
    const res = await t.req("POST", "/api/v1/wide", { body: { one_more: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: "one_more", rule: "fields", message: expect.any(String) }]);
    expect((await t.req("POST", "/api/v1/wide", { body: { f3: 9, one_more: null } })).status).toBe(201);
  });
});

describe("GET /:collection/:id", () => {
  test("returns the record", async () => {
    const user = await owner();
    const rec = await create({ title: "read me" }, user.token);
    const res = await t.req("GET", `/api/v1/items/${rec.body._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(rec.body);
  });

  test("fields picks the named fields plus _id, as on a list; an unknown field is 400", async () => {
    const user = await owner();
    const rec = await create({ title: "pick me", extra: 7 }, user.token);
    const res = await t.req("GET", `/api/v1/items/${rec.body._id}?fields=title,extra`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ _id: rec.body._id, title: "pick me", extra: 7 });
    const bad = await t.req("GET", `/api/v1/items/${rec.body._id}?fields=title,nope`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'unknown field "nope" in collection "items"', code: "bad_request" });
    // Read as a list reads it: any letter case, the last fields= given, a blank list is `_id` alone.
    for (const [query, expected] of [
      ["fields=TITLE", { _id: rec.body._id, title: "pick me" }],
      ["fields=title&fields=extra", { _id: rec.body._id, extra: 7 }],
      ["fields=,", { _id: rec.body._id }],
    ] as const) {
      const one = await t.req("GET", `/api/v1/items/${rec.body._id}?${query}`);
      expect({ query, status: one.status, body: one.body }).toEqual({ query, status: 200, body: expected });
      const listed = await t.req("GET", `/api/v1/items?filter=_id:eq:${rec.body._id}&${query}`, { token: user.token });
      expect(listed.body.items).toEqual([expected]);
    }
  });

  test("an unknown id is 404 not_found, an unknown collection too", async () => {
    const res = await t.req("GET", "/api/v1/items/01ARZ3NDEKTSV4RRFFQ69G5FAV");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), code: "not_found" });
    expect((await t.req("GET", "/api/v1/nothing/01ARZ3NDEKTSV4RRFFQ69G5FAV")).status).toBe(404);
  });

  test.each([["' OR '1'='1"], ["1; DROP TABLE items"], ['"'], ["%00"], ["x".repeat(300)]])(
    "an SQL-looking id %p is a plain 404",
    async (id) => {
      const res = await t.req("GET", `/api/v1/items/${encodeURIComponent(id)}`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe("not_found");
    },
  );
});

describe("PATCH /:collection/:id", () => {
  test("changes only the given fields, null clears one, and answers the whole record", async () => {
    const user = await owner();
    const rec = await create({ title: "t", n: 1, done: true }, user.token);
    t.clock.advance(1000);
    const res = await t.req("PATCH", `/api/v1/items/${rec.body._id}`, { body: { n: 2, done: null } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...rec.body, n: 2, done: null, _updated_at: rec.body._updated_at + 1000 });
    expect((await t.req("GET", `/api/v1/items/${rec.body._id}`)).body).toEqual(res.body);
  });

  test("a patch may add a new field", async () => {
    const rec = await create({ title: "t" });
    const res = await t.req("PATCH", `/api/v1/items/${rec.body._id}`, { body: { extra_field: "new" } });
    expect(res.status).toBe(200);
    expect(res.body.extra_field).toBe("new");
  });

  test("system fields in a patch are ignored", async () => {
    const user = await owner();
    const rec = await create({ title: "t" }, user.token);
    const res = await t.req("PATCH", `/api/v1/items/${rec.body._id}`, {
      body: { _id: "X", _owner_id: "other", _created_at: 5, _deleted_at: 5, title: "u" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ _id: rec.body._id, _owner_id: user.id, _created_at: rec.body._created_at, _deleted_at: null, title: "u" });
  });

  test("an unknown record is 404, a non-object body 400, malformed JSON 400 invalid_json", async () => {
    expect((await t.req("PATCH", "/api/v1/items/01ARZ3NDEKTSV4RRFFQ69G5FAV", { body: { a: 1 } })).status).toBe(404);
    const rec = await create({ title: "t" });
    expect((await t.req("PATCH", `/api/v1/items/${rec.body._id}`, { body: [1] })).status).toBe(400);
    const bad = await t.req("PATCH", `/api/v1/items/${rec.body._id}`, { body: "{x" });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_json");
  });
});

describe("DELETE and restore", () => {
  test("DELETE answers 200 with _deleted_at and _updated_at set to now; again 404", async () => {
    const rec = await create({ title: "bye" });
    t.clock.advance(1000);
    const res = await t.req("DELETE", `/api/v1/items/${rec.body._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...rec.body, _updated_at: t.clock.now(), _deleted_at: t.clock.now() });
    const again = await t.req("DELETE", `/api/v1/items/${rec.body._id}`);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe("not_found");
  });

  test("a soft-deleted record is 404 on GET unless include_deleted=true, and 404 on PATCH", async () => {
    const rec = await create({ title: "gone" });
    const del = await t.req("DELETE", `/api/v1/items/${rec.body._id}`);
    expect((await t.req("GET", `/api/v1/items/${rec.body._id}`)).status).toBe(404);
    const incl = await t.req("GET", `/api/v1/items/${rec.body._id}?include_deleted=true`);
    expect(incl.status).toBe(200);
    expect(incl.body).toEqual(del.body);
    expect((await t.req("PATCH", `/api/v1/items/${rec.body._id}`, { body: { title: "x" } })).status).toBe(404);
  });

  test("restore answers 200 with _deleted_at null and _updated_at set to now", async () => {
    const rec = await create({ title: "back" });
    t.clock.advance(1000);
    await t.req("DELETE", `/api/v1/items/${rec.body._id}`);
    t.clock.advance(1000);
    const res = await t.req("POST", `/api/v1/items/${rec.body._id}/restore`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...rec.body, _updated_at: t.clock.now() });
    expect((await t.req("GET", `/api/v1/items/${rec.body._id}`)).status).toBe(200);
  });

  test("restoring an active record is a no-op 200", async () => {
    const rec = await create({ title: "active" });
    const res = await t.req("POST", `/api/v1/items/${rec.body._id}/restore`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(rec.body);
  });

  test("restoring or deleting an unknown record is 404", async () => {
    expect((await t.req("POST", "/api/v1/items/01ARZ3NDEKTSV4RRFFQ69G5FAV/restore")).status).toBe(404);
    expect((await t.req("DELETE", "/api/v1/items/01ARZ3NDEKTSV4RRFFQ69G5FAV")).status).toBe(404);
  });
});

describe("GET /:collection (plain list)", () => {
  let ids: string[] = [];
  beforeEach(async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "listed", rules: { create: "public", delete: "public" } });
    ids = [];
    for (let i = 0; i < 7; i++) ids.push((await t.req("POST", "/api/v1/listed", { body: { i } })).body._id);
  });

  test("lists records by _id ascending with items, next_cursor and total", async () => {
    const res = await t.req("GET", "/api/v1/listed");
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["items", "next_cursor", "total"]);
    expect(res.body.items.map((r: { _id: string }) => r._id)).toEqual(ids);
    expect(res.body.total).toBe(7);
    expect(res.body.next_cursor).toBeNull();
  });

  test("limit and page slice the list; next_cursor is the last item's _id while more follow", async () => {
    const p1 = await t.req("GET", "/api/v1/listed?limit=3");
    expect(p1.body.items.map((r: { _id: string }) => r._id)).toEqual(ids.slice(0, 3));
    expect(p1.body.next_cursor).toBe(ids[2]);
    expect(p1.body.total).toBe(7);
    const p3 = await t.req("GET", "/api/v1/listed?limit=3&page=3");
    expect(p3.body.items.map((r: { _id: string }) => r._id)).toEqual(ids.slice(6));
    expect(p3.body.next_cursor).toBeNull();
    const p9 = await t.req("GET", "/api/v1/listed?limit=3&page=9");
    expect(p9.body).toEqual({ items: [], next_cursor: null, total: 7 });
  });

  test("after pages by cursor with total null", async () => {
    const res = await t.req("GET", `/api/v1/listed?limit=4&after=${ids[1]}`);
    expect(res.body.items.map((r: { _id: string }) => r._id)).toEqual(ids.slice(2, 6));
    expect(res.body.next_cursor).toBe(ids[5]);
    expect(res.body.total).toBeNull();
  });

  test("soft-deleted records are left out unless include_deleted=true", async () => {
    await t.req("DELETE", `/api/v1/listed/${ids[0]}`);
    const res = await t.req("GET", "/api/v1/listed");
    expect(res.body.total).toBe(6);
    expect(res.body.items[0]._id).toBe(ids[1]);
    const all = await t.req("GET", "/api/v1/listed?include_deleted=true");
    expect(all.body.total).toBe(7);
    expect(all.body.items[0]._deleted_at).toBeNumber();
  });

  test.each([["limit=0"], ["limit=501"], ["limit=abc"], ["page=0"], ["page=-1"], ["include_deleted=maybe"], ["after=nope"]])(
    "%s is 400 bad_request",
    async (qs) => {
      const res = await t.req("GET", `/api/v1/listed?${qs}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
    },
  );

  test("an unknown collection is 404", async () => {
    expect((await t.req("GET", "/api/v1/missing")).status).toBe(404);
  });
});

describe("hostile input is handled safely", () => {
  test("SQL-looking values are stored and returned verbatim", async () => {
    await owner();
    const evil = ["'; DROP TABLE items; --", '" OR 1=1 --', "Robert'); DELETE FROM _users;--", "\u0000nul", "😀 ünïcode"];
    for (const v of evil) {
      const res = await create({ title: v });
      expect(res.status).toBe(201);
      expect((await t.req("GET", `/api/v1/items/${res.body._id}`)).body.title).toBe(v);
    }
    expect((await t.req("GET", "/api/v1/items?limit=1")).status).toBe(200);
    expect(await countRows(t, "_users")).toBe(1);
  });

  test.each([["items;DROP TABLE items"], ["items--"], ["sqlite_master"], ["_users"], ["_sessions"]])(
    "the collection path %p is a 404 and touches nothing",
    async (name) => {
      const res = await t.admin("GET", `/api/v1/${encodeURIComponent(name)}`);
      expect(res.status).toBe(404);
      expect((await t.admin("POST", `/api/v1/${encodeURIComponent(name)}`, { a: 1 })).status).toBe(404);
    },
  );

  test.each([["select"], ["order"], ["table"], ["index"]])("SQL keywords work as collection (%p) and field names", async (name) => {
    expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { create: "public", update: "public" } })).status).toBe(201);
    const rec = await t.req("POST", `/api/v1/${name}`, { body: { order: 1, select: "x", from: true, group: [1], where: null } });
    expect(rec.status).toBe(201);
    expect(rec.body).toMatchObject({ order: 1, select: "x", from: true, group: [1] });
    expect((await t.req("PATCH", `/api/v1/${name}/${rec.body._id}`, { body: { order: 2 } })).body.order).toBe(2);
    expect((await t.req("GET", `/api/v1/${name}`)).body.total).toBe(1);
    expect((await t.admin("GET", `/api/v1/admin/collections/${name}/stats`)).body.row_count).toBe(1);
  });

  test("a deeply nested or huge-number value does not crash the server", async () => {
    const nest = (levels: number) => {
      let deep: unknown = 1;
      for (let i = 0; i < levels; i++) deep = [deep];
      return deep;
    };
    // The body object is one level, so the value may nest 63 more.
    const res = await create({ deep_json: nest(63), big: 1e308 });
    expect(res.status).toBe(201);
    expect(res.body.big).toBe(1e308);
    const tooDeep = await create({ deep_json: nest(2000) });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.code).toBe("bad_request");
  });
});
