import { describe, expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";

// Every test gets its own app with four collections and their field rules.
const t = appPerTest(async (t) => {
  for (const name of ["posts", "nums", "lists", "evil"]) await createCollection(t, name, { create: "public", update: "public" });
  expect(
    (
      await rules("posts", [
        { field: "title", required: true, min: 3, max: 10 },
        { field: "status", enum: ["draft", "published"] },
        { field: "code", regex: "^[A-Z]+$" },
      ])
    ).status,
  ).toBe(200);
  expect((await rules("nums", [{ field: "n", required: true, min: 1, max: 10 }, { field: "flag", enum: [true] }, { field: "level", enum: [1, 2, 3] }])).status).toBe(200);
  expect((await rules("lists", [{ field: "tags", min: 1, max: 3 }, { field: "tags", regex: "^x$" }])).status).toBe(200);
});

const rules = (name: string, field_rules: unknown) => t.admin("PUT", `/api/v1/admin/collections/${name}/rules`, { field_rules });
const create = (name: string, body: unknown) => t.admin("POST", `/api/v1/${name}`, body);

describe("field rules on create", () => {
  test("a missing required field is a 422 with CONTRACT's message", async () => {
    const res = await create("posts", { status: "draft" });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ errors: [{ field: "title", rule: "required", message: '"title" is required.' }] });
  });

  test("a null required field fails the same way on create", async () => {
    const res = await create("posts", { title: null });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: "title", rule: "required", message: '"title" is required.' }]);
  });

  test("every failure is listed, in field_rules order", async () => {
    const res = await create("posts", { code: "abc", status: "gone", title: "ab" });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      errors: [
        { field: "title", rule: "min", message: '"title" must be at least 3 characters.' },
        { field: "status", rule: "enum", message: '"status" must be one of: "draft", "published".' },
        { field: "code", rule: "regex", message: '"code" must match the pattern ^[A-Z]+$.' },
      ],
    });
  });

  test("a string longer than max fails with a characters message", async () => {
    const res = await create("posts", { title: "a".repeat(11) });
    expect(res.body.errors).toEqual([{ field: "title", rule: "max", message: '"title" must be at most 10 characters.' }]);
  });

  test("string length counts characters, not UTF-16 units", async () => {
    const res = await create("posts", { title: "😀😀😀" });
    expect(res.status).toBe(201);
  });

  test("a valid record is created", async () => {
    const res = await create("posts", { title: "Hello", status: "published", code: "ABC" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ title: "Hello", status: "published", code: "ABC" });
  });

  test("numbers are compared by value against min and max", async () => {
    expect((await create("nums", { n: 0 })).body.errors).toEqual([{ field: "n", rule: "min", message: '"n" must be at least 1.' }]);
    expect((await create("nums", { n: 11 })).body.errors).toEqual([{ field: "n", rule: "max", message: '"n" must be at most 10.' }]);
    expect((await create("nums", { n: 10 })).status).toBe(201);
  });

  test("enum works for booleans and numbers", async () => {
    const res = await create("nums", { n: 5, flag: false, level: 4 });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { field: "flag", rule: "enum", message: '"flag" must be one of: true.' },
      { field: "level", rule: "enum", message: '"level" must be one of: 1, 2, 3.' },
    ]);
    expect((await create("nums", { n: 5, flag: true, level: 2 })).status).toBe(201);
  });

  test("arrays are measured by item count and regex skips non-strings", async () => {
    expect((await create("lists", { tags: [] })).body.errors).toEqual([
      { field: "tags", rule: "min", message: '"tags" must have at least 1 items.' },
    ]);
    expect((await create("lists", { tags: [1, 2, 3, 4] })).body.errors).toEqual([
      { field: "tags", rule: "max", message: '"tags" must have at most 3 items.' },
    ]);
    expect((await create("lists", { tags: ["a"] })).status).toBe(201);
  });

  test("optional rules do not fire when the field is absent or null", async () => {
    expect((await create("posts", { title: "Fine", status: null, code: null })).status).toBe(201);
  });
});

describe("rules that do not apply to a value's type", () => {
  test("min/max skip booleans and objects, regex skips numbers, enum compares objects by value", async () => {
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "mixed" })).status).toBe(201);
    const set = await rules("mixed", [
      { field: "flag", min: 5, max: 6 },
      { field: "meta", min: 5, max: 6 },
      { field: "num", regex: "^x$" },
      { field: "shape", enum: [{ a: 1 }, [1, 2]] },
    ]);
    expect(set.status).toBe(200);
    expect((await create("mixed", { flag: true, meta: { k: 1 }, num: 3, shape: { a: 1 } })).status).toBe(201);
    expect((await create("mixed", { shape: [1, 2] })).status).toBe(201);
    const bad = await create("mixed", { shape: { a: 2 } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([{ field: "shape", rule: "enum", message: '"shape" must be one of: {"a":1}, [1,2].' }]);
  });
});

describe("field rules on update", () => {
  test("required only fails on an explicit null, and other rules check present values", async () => {
    expect((await create("posts", { title: "First", code: "ABC" })).status).toBe(201);
    const made = await create("posts", { title: "Hello" });
    const id = made.body._id;
    expect((await t.admin("PATCH", `/api/v1/posts/${id}`, { status: "draft" })).status).toBe(200);
    const nulled = await t.admin("PATCH", `/api/v1/posts/${id}`, { title: null });
    expect(nulled.status).toBe(422);
    expect(nulled.body).toEqual({ errors: [{ field: "title", rule: "required", message: '"title" is required.' }] });
    const bad = await t.admin("PATCH", `/api/v1/posts/${id}`, { status: "x", code: "lower" });
    expect(bad.body.errors.map((e: { rule: string }) => e.rule)).toEqual(["enum", "regex"]);
    expect((await t.admin("GET", `/api/v1/posts/${id}`)).body).toMatchObject({ title: "Hello", status: "draft", code: null });
  });
});

describe("type and name failures with field rule failures", () => {
  test("all are listed: the field rules' in field_rules order, then the types and names, on create, bulk and update", async () => {
    expect((await create("posts", { title: "First", views: 1 })).status).toBe(201);
    const typeOnly = { field: "views", rule: "type", message: '"views" must be a number.' };
    const res = await create("posts", { views: "many", status: "gone", "bad name": 1 });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { field: "title", rule: "required", message: '"title" is required.' },
      { field: "status", rule: "enum", message: '"status" must be one of: "draft", "published".' },
      typeOnly,
      { field: "bad name", rule: "name", message: '"bad name" is not a valid field name.' },
    ]);
    const bulk = await t.admin("POST", "/api/v1/posts/bulk", [{ title: "Fine" }, { title: "ab", views: "x" }]);
    expect(bulk.status).toBe(422);
    expect(bulk.body.errors.map((e: { rule: string; index: number }) => [e.rule, e.index])).toEqual([["min", 1], ["type", 1]]);
    const id = (await create("posts", { title: "Hello" })).body._id;
    const patch = await t.admin("PATCH", `/api/v1/posts/${id}`, { views: "x", title: "a", code: "lower" });
    expect(patch.status).toBe(422);
    expect(patch.body.errors.map((e: { rule: string }) => e.rule)).toEqual(["min", "regex", "type"]);
    // A field whose type fails is not checked against its rules as well.
    const typed = await t.admin("PATCH", `/api/v1/posts/${id}`, { title: 5 });
    expect(typed.body.errors).toEqual([{ field: "title", rule: "type", message: '"title" must be a string.' }]);
  });
});

describe("PUT …/rules validates field rules strictly", () => {
  const bad: [string, unknown][] = [
    ["an unknown key", [{ field: "a", minimum: 1 }]],
    ["a regex that does not compile", [{ field: "a", regex: "([a-z" }]],
    ["min greater than max", [{ field: "a", min: 5, max: 2 }]],
    ["an empty enum", [{ field: "a", enum: [] }]],
    ["a missing field name", [{ required: true }]],
    ["an invalid field name", [{ field: "1abc" }]],
    ["a non-boolean required", [{ field: "a", required: "yes" }]],
    ["a non-number min", [{ field: "a", min: "3" }]],
    ["a non-array enum", [{ field: "a", enum: "x" }]],
    ["a rule that is not an object", ["a"]],
    ["field_rules that is not an array", { field: "a" }],
    ["a lookahead (the RE2 engine has none)", [{ field: "a", regex: "^(?=a)a$" }]],
    ["a backreference", [{ field: "a", regex: "^(a)\\1$" }]],
    ["a pattern over 256 characters", [{ field: "a", regex: "a".repeat(257) }]],
  ];
  for (const [what, value] of bad)
    test(`${what} is a 400`, async () => {
      const res = await rules("evil", value);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
    });

  test("the collection object carries the stored field rules", async () => {
    const res = await rules("evil", [{ field: "a", required: false, min: 1, max: 1, regex: "^a$", enum: ["a"] }]);
    expect(res.status).toBe(200);
    expect(res.body.field_rules).toEqual([{ field: "a", required: false, min: 1, max: 1, regex: "^a$", enum: ["a"] }]);
  });
});

describe("a slow regex cannot hang the server", () => {
  test("a polynomial pattern on a long value is refused within its time budget", async () => {
    expect((await rules("evil", [{ field: "s", regex: "^\\d+\\d+\\d+\\d+x$" }])).status).toBe(200);
    // The baseline: a matching value as long, quick for any engine, timed on this machine now.
    let started = performance.now();
    expect((await create("evil", { s: `${"1".repeat(4999)}x` })).status).toBe(201);
    const baseline = performance.now() - started;
    started = performance.now();
    const res = await create("evil", { s: "1".repeat(5000) });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: "s", rule: "regex", message: '"s" must match the pattern ^\\d+\\d+\\d+\\d+x$.' }]);
    // A backtracking engine tries every way to split 5,000 digits in four (about 10^13): hours, not a few baselines.
    expect(performance.now() - started).toBeLessThan(10 * baseline + 200);
    expect((await create("evil", { s: "1111x" })).status).toBe(201);
    expect((await t.req("GET", "/health")).status).toBe(200);
  });
});
