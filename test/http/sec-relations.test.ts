import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, registerUser, type TestApp } from "../helpers/app.ts";

// Relations respect the target's read rule: a write naming a record the writer may not read is
// 422 `relation` like a missing one, and filters on a `many` field count only readable targets.

let t: TestApp;
let alice: string;
let bob: string;
let carol: string;
let diary: string;
let post: string;
let bobComment: string;

const owner = { read: "owner", create: "authenticated", update: "owner", delete: "owner" };

beforeAll(async () => {
  t = createTestApp();
  alice = (await registerUser(t, "alice@example.com")).token;
  bob = (await registerUser(t, "bob@example.com")).token;
  carol = (await registerUser(t, "carol@example.com")).token;
  const collections: [string, object][] = [
    ["diary", owner],
    ["shares", { read: "authenticated", create: "authenticated", update: "owner", delete: "owner" }],
    ["posts", { read: "public", create: "authenticated" }],
    ["comments", owner],
  ];
  for (const [name, rules] of collections) expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules })).status).toBe(201);
  const relations = [
    { from_col: "shares", from_field: "entry", to_col: "diary", type: "one" },
    { from_col: "shares", from_field: "pages", to_col: "diary", type: "many_via" },
    { from_col: "comments", from_field: "post", to_col: "posts", type: "one" },
    { from_col: "posts", from_field: "comments", to_col: "comments", type: "many", to_field: "post" },
  ];
  for (const r of relations) expect((await t.admin("POST", "/api/v1/admin/relations", r)).status).toBe(201);
  diary = (await t.req("POST", "/api/v1/diary", { body: { text: "secret" }, token: alice })).body._id;
  post = (await t.req("POST", "/api/v1/posts", { body: { title: "hello" }, token: alice })).body._id;
  const c = await t.req("POST", "/api/v1/comments", { body: { post, text: "hidden" }, token: bob });
  expect(c.status).toBe(201);
  bobComment = c.body._id;
});
afterAll(() => t.close());

const missing = (field: string, to: string) => ({
  errors: [{ field, rule: "relation", message: `"${field}" must name an existing record of "${to}".` }],
});

describe("relation writes under the target's read rule", () => {
  test("a one value naming another user's owner-read record is 422 relation, the same as a bogus id", async () => {
    const hidden = await t.req("POST", "/api/v1/shares", { body: { entry: diary }, token: bob });
    const bogus = await t.req("POST", "/api/v1/shares", { body: { entry: "01BOGUSBOGUSBOGUSBOGUSBOGU" }, token: bob });
    expect(bogus.status).toBe(422);
    expect(bogus.body).toEqual(missing("entry", "diary"));
    expect(hidden.status).toBe(422);
    expect(hidden.body).toEqual(missing("entry", "diary"));
  });

  test("the same on update, and for a many_via id", async () => {
    const mine = await t.req("POST", "/api/v1/shares", { body: { note: "x" }, token: bob });
    expect(mine.status).toBe(201);
    const patched = await t.req("PATCH", `/api/v1/shares/${mine.body._id}`, { body: { entry: diary }, token: bob });
    expect(patched.status).toBe(422);
    expect(patched.body).toEqual(missing("entry", "diary"));
    const linked = await t.req("POST", "/api/v1/shares", { body: { pages: [diary] }, token: bob });
    expect(linked.status).toBe(422);
    expect(linked.body.errors).toEqual([
      { field: "pages", rule: "relation", message: `"pages" must name existing records of "diary"; not found: ${JSON.stringify(diary)}.` },
    ]);
  });

  test("the owner of the hidden record can still delete it (no restrict hold by a stranger)", async () => {
    const own = await t.req("POST", "/api/v1/diary", { body: { text: "mine" }, token: alice });
    expect((await t.req("POST", "/api/v1/shares", { body: { entry: own.body._id }, token: bob })).status).toBe(422);
    expect((await t.req("DELETE", `/api/v1/diary/${own.body._id}`, { token: alice })).status).toBe(200);
  });

  test("the owner may link her own record, and the admin any", async () => {
    expect((await t.req("POST", "/api/v1/shares", { body: { entry: diary, pages: [diary] }, token: alice })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/shares", { entry: diary })).status).toBe(201);
  });
});

describe("filters on a many field see only readable targets", () => {
  test("comments:ne:null does not reveal a post that has only hidden comments", async () => {
    const list = await t.req("GET", "/api/v1/posts?filter=comments:ne:null", { token: carol });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([]);
    const count = await t.req("GET", "/api/v1/posts/count?filter=comments:ne:null", { token: carol });
    expect(count.body).toEqual({ total: 0 });
    const none = await t.req("GET", "/api/v1/posts/count?filter=comments:eq:null", { token: carol });
    expect(none.body).toEqual({ total: 1 });
    const anon = await t.req("GET", "/api/v1/posts/count?filter=comments:ne:null");
    expect(anon.body).toEqual({ total: 0 });
  });

  test("comments:eq:<id> and comments:in:<id> match only for a reader of that comment", async () => {
    for (const f of [`comments:eq:${bobComment}`, `comments:in:${bobComment},null`]) {
      expect((await t.req("GET", `/api/v1/posts/count?filter=${f}`, { token: bob })).body).toEqual({ total: 1 });
      expect((await t.req("GET", `/api/v1/posts/count?filter=${f}`, { token: carol })).body).toEqual({ total: f.includes("null") ? 1 : 0 });
    }
    expect((await t.req("GET", `/api/v1/posts/count?filter=comments:eq:${bobComment}`, { token: carol })).body).toEqual({ total: 0 });
    expect((await t.req("GET", `/api/v1/posts/count?filter=comments:ne:${bobComment}`, { token: carol })).body).toEqual({ total: 1 });
  });

  test("the comment's author and the admin see the post through the filter", async () => {
    const mine = await t.req("GET", "/api/v1/posts?filter=comments:ne:null&fields=title,comments", { token: bob });
    expect(mine.body.items).toEqual([{ _id: post, title: "hello", comments: [bobComment] }]);
    expect((await t.admin("GET", "/api/v1/posts/count?filter=comments:ne:null")).body).toEqual({ total: 1 });
  });
});

describe("what expand may add to an answer", () => {
  test("a page of records naming one large record is 400 past 64 MiB of expanded records, and answered below it", async () => {
    for (const name of ["big_authors", "big_posts"])
      expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public", create: "authenticated" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "big_posts", from_field: "author", to_col: "big_authors", type: "one" })).status).toBe(201);
    const author = await t.req("POST", "/api/v1/big_authors", { body: { bio: "b".repeat(1024 * 1024) }, token: alice });
    expect(author.status).toBe(201);
    const posts = Array.from({ length: 70 }, (_, i) => ({ title: `p${i}`, author: author.body._id }));
    expect((await t.req("POST", "/api/v1/big_posts/bulk", { body: posts, token: alice })).status).toBe(201);
    // 70 copies of a 1 MiB record: refused before the text is written.
    const all = await t.req("GET", "/api/v1/big_posts?limit=100&expand=author");
    expect(all.status).toBe(400);
    expect(all.body).toEqual({ error: expect.stringContaining("larger than 64 MiB"), code: "bad_request" });
    // 50 of them fit; the record itself, without expand, is not limited by this.
    const some = await t.req("GET", "/api/v1/big_posts?limit=50&expand=author");
    expect(some.status).toBe(200);
    expect(some.body.items).toHaveLength(50);
    expect(some.body.items[49]._expand.author.bio).toHaveLength(1024 * 1024);
    expect((await t.req("GET", "/api/v1/big_posts?limit=100")).body.items).toHaveLength(70);
  });
});

describe("relation fields in a body", () => {
  test("under another letter case they are 422 name, as any field; nothing is linked or stored", async () => {
    const posts = await t.req("GET", `/api/v1/posts/${post}`, { token: alice });
    expect(posts.status).toBe(200);
    for (const body of [{ Pages: [diary] }, { pages: [diary], Pages: [diary] }, { Entry: diary }]) {
      const res = await t.req("POST", "/api/v1/shares", { body, token: alice });
      expect(res.status).toBe(422);
      expect(res.body.errors).toContainEqual(expect.objectContaining({ rule: "name", field: Object.keys(body).find((k) => k !== k.toLowerCase()) }));
    }
    // No column was made of a relation's name under another spelling.
    const fields = (await t.admin("GET", "/api/v1/admin/collections/shares")).body.fields.map((f: { name: string }) => f.name);
    expect(fields.filter((f: string) => f.toLowerCase() === "pages")).toEqual([]);
    const ok = await t.req("POST", "/api/v1/shares", { body: { pages: [diary] }, token: alice });
    expect(ok.status).toBe(201);
    expect(ok.body.pages).toEqual([diary]);
  });
});
