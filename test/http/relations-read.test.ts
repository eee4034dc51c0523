import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestApp, registerUser } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";

setDefaultTimeout(30_000); // password hashing on a loaded machine
const t = createTestApp();
afterAll(() => t.close());

async function create(col: string, body: Record<string, unknown>, token?: string) {
  const res = token ? await t.req("POST", `/api/v1/${col}`, { body, token }) : await t.admin("POST", `/api/v1/${col}`, body);
  expect(res.status).toBe(201);
  return res.body._id as string;
}

const rel = async (body: Record<string, unknown>) => expect((await t.admin("POST", "/api/v1/admin/relations", body)).status).toBe(201);

let ann = "";
let bob = "";
let tagA = "";
let tagB = "";
let hidden = "";

beforeAll(async () => {
  await t.admin("POST", "/api/v1/admin/collections", { name: "authors", rules: { read: "public" } });
  await t.admin("POST", "/api/v1/admin/collections", { name: "posts", rules: { read: "public", create: "authenticated" } });
  await t.admin("POST", "/api/v1/admin/collections", { name: "comments" });
  await t.admin("POST", "/api/v1/admin/collections", { name: "tags" });
  await t.admin("POST", "/api/v1/admin/collections", { name: "secrets", rules: { read: "disabled" } });
  await rel({ from_col: "posts", from_field: "author", to_col: "authors", type: "one", on_delete: "set_null" });
  await rel({ from_col: "comments", from_field: "post", to_col: "posts", type: "one", on_delete: "cascade" });
  await rel({ from_col: "posts", from_field: "comments", to_col: "comments", type: "many" });
  await rel({ from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" });
  await rel({ from_col: "posts", from_field: "secret", to_col: "secrets", type: "one" });
  await rel({ from_col: "posts", from_field: "secretlist", to_col: "secrets", type: "many_via" });
  await t.admin("POST", "/api/v1/admin/collections", { name: "members", rules: { read: "authenticated" } });
  await rel({ from_col: "posts", from_field: "members", to_col: "members", type: "many_via" });
  ann = await create("authors", { name: "Ann" });
  bob = await create("authors", { name: "Bob" });
  tagA = await create("tags", { label: "a" });
  tagB = await create("tags", { label: "b" });
  hidden = await create("secrets", { code: "x" });
});

describe("many_via links", () => {
  test("a create stores the ids in order without duplicates and returns them", async () => {
    const res = await t.admin("POST", "/api/v1/posts", { title: "p", tags: [tagB, tagA, tagB] });
    expect(res.status).toBe(201);
    expect(res.body.tags).toEqual([tagB, tagA]);
    expect((await t.admin("GET", `/api/v1/posts/${res.body._id}`)).body.tags).toEqual([tagB, tagA]);
    const col = (await t.admin("GET", "/api/v1/admin/collections/posts")).body;
    expect(col.fields.map((f: any) => f.name)).not.toContain("tags");
  });

  test("an update replaces the links, null clears them, and a record without links shows []", async () => {
    const id = await create("posts", { title: "q", tags: [tagA] });
    expect((await t.admin("PATCH", `/api/v1/posts/${id}`, { tags: [tagB] })).body.tags).toEqual([tagB]);
    expect((await t.admin("PATCH", `/api/v1/posts/${id}`, { title: "q2" })).body.tags).toEqual([tagB]);
    expect((await t.admin("PATCH", `/api/v1/posts/${id}`, { tags: null })).body.tags).toEqual([]);
  });

  test("an id naming no record is 422 rule relation and nothing is saved", async () => {
    const res = await t.admin("POST", "/api/v1/posts", { title: "bad", tags: [tagA, "nope"] });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ errors: [{ field: "tags", rule: "relation", message: `"tags" must name existing records of "tags"; not found: "nope".` }] });
    const list = await t.admin("GET", "/api/v1/posts?limit=500");
    expect(list.body.items.some((p: any) => p.title === "bad")).toBe(false);
  });

  test("a value that is not an array of ids is 422 rule type", async () => {
    for (const tags of ["x", [1], { a: 1 }]) {
      const res = await t.admin("POST", "/api/v1/posts", { title: "bad", tags });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ field: "tags", rule: "type", message: `"tags" must be an array of record ids.` }]);
    }
  });

  test("on_delete restrict: a linked tag cannot be deleted while an active record links it", async () => {
    const tag = await create("tags", { label: "r" });
    const post = await create("posts", { title: "r", tags: [tag] });
    const res = await t.admin("DELETE", `/api/v1/tags/${tag}`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("conflict");
    expect((await t.admin("DELETE", `/api/v1/admin/collections/tags/records/${tag}`)).status).toBe(409);
    expect((await t.admin("DELETE", `/api/v1/posts/${post}`)).status).toBe(200);
    expect((await t.admin("DELETE", `/api/v1/tags/${tag}`)).status).toBe(200);
    // the soft-deleted post keeps its links, restoring it shows them
    expect((await t.admin("POST", `/api/v1/posts/${post}/restore`)).body.tags).toEqual([tag]);
  });

  test("hard-deleting a record removes its links", async () => {
    const post = await create("posts", { title: "h", tags: [tagA] });
    const viaRel = (await t.admin("GET", "/api/v1/admin/relations")).body.items.find((r: any) => r.type === "many_via");
    const count = () => countRows(t, `_rel_${viaRel.id.toLowerCase()}`, "from_id = ?", [post]);
    expect(await count()).toBe(1);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/posts/records/${post}`)).status).toBe(200);
    expect(await count()).toBe(0);
  });
});

describe("many_via on_delete cascade and set_null", () => {
  beforeAll(async () => {
    for (const name of ["articles", "labels", "cats"]) await t.admin("POST", "/api/v1/admin/collections", { name });
    await rel({ from_col: "articles", from_field: "labels", to_col: "labels", type: "many_via", on_delete: "cascade" });
    await rel({ from_col: "articles", from_field: "cats", to_col: "cats", type: "many_via", on_delete: "set_null" });
  });

  test("cascade: soft-deleting a target removes its links (records stay), restoring it puts them back", async () => {
    const l1 = await create("labels", {});
    const l2 = await create("labels", {});
    const art = await create("articles", { labels: [l1, l2] });
    expect((await t.admin("DELETE", `/api/v1/labels/${l1}`)).status).toBe(200);
    const after = (await t.admin("GET", `/api/v1/articles/${art}`)).body;
    expect(after._deleted_at).toBeNull();
    expect(after.labels).toEqual([l2]);
    expect((await t.admin("POST", `/api/v1/labels/${l1}/restore`)).status).toBe(200);
    expect((await t.admin("GET", `/api/v1/articles/${art}`)).body.labels).toEqual([l1, l2]);
  });

  test("cascade: a restored link takes back its old place, after the link that took that place since; every read agrees", async () => {
    const [b, a, c, d] = [await create("labels", {}), await create("labels", {}), await create("labels", {}), await create("labels", {})];
    const art = await create("articles", { labels: [a, b, c] });
    expect((await t.admin("DELETE", `/api/v1/labels/${b}`)).status).toBe(200);
    expect((await t.admin("PATCH", `/api/v1/articles/${art}`, { labels: [c, a, d] })).status).toBe(200);
    const events: unknown[] = [];
    const stop = t.ctx.events.subscribe((e) => {
      if (e.collection === "articles") events.push(e.record.labels);
    });
    expect((await t.admin("POST", `/api/v1/labels/${b}/restore`)).status).toBe(200);
    stop();
    const order = [c, a, b, d];
    expect(events).toEqual([order]);
    const read = (await t.admin("GET", `/api/v1/articles/${art}?expand=labels`)).body;
    expect(read.labels).toEqual(order);
    expect(read._expand.labels.map((l: { _id: string }) => l._id)).toEqual(order);
  });

  test("cascade: hard-deleting a target removes its links for good", async () => {
    const l1 = await create("labels", {});
    const art = await create("articles", { labels: [l1] });
    expect((await t.admin("DELETE", `/api/v1/admin/collections/labels/records/${l1}`)).status).toBe(200);
    expect((await t.admin("GET", `/api/v1/articles/${art}`)).body.labels).toEqual([]);
  });

  test("set_null: soft delete removes the links and restore does not bring them back; hard delete too", async () => {
    const c1 = await create("cats", {});
    const c2 = await create("cats", {});
    const art = await create("articles", { cats: [c1, c2] });
    expect((await t.admin("DELETE", `/api/v1/cats/${c1}`)).status).toBe(200);
    expect((await t.admin("GET", `/api/v1/articles/${art}`)).body.cats).toEqual([c2]);
    expect((await t.admin("POST", `/api/v1/cats/${c1}/restore`)).status).toBe(200);
    expect((await t.admin("GET", `/api/v1/articles/${art}`)).body.cats).toEqual([c2]);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/cats/records/${c2}`)).status).toBe(200);
    expect((await t.admin("GET", `/api/v1/articles/${art}`)).body.cats).toEqual([]);
  });
});

describe("many: the virtual reverse field", () => {
  test("a post shows the ids of its active comments; a value sent for it is ignored", async () => {
    const post = await create("posts", { title: "m", comments: ["ignored"] });
    const c1 = await create("comments", { post, text: "1" });
    const c2 = await create("comments", { post, text: "2" });
    await create("comments", { text: "elsewhere" });
    expect((await t.admin("GET", `/api/v1/posts/${post}`)).body.comments).toEqual([c1, c2]);
    expect((await t.admin("DELETE", `/api/v1/comments/${c1}`)).status).toBe(200);
    expect((await t.admin("GET", `/api/v1/posts/${post}`)).body.comments).toEqual([c2]);
    const col = (await t.admin("GET", "/api/v1/admin/collections/posts")).body;
    expect(col.fields.map((f: any) => f.name)).not.toContain("comments");
  });
});

describe("expand", () => {
  test("expand on get embeds one, many and many_via targets under _expand", async () => {
    const post = await create("posts", { title: "e", author: ann, tags: [tagA, tagB] });
    const c1 = await create("comments", { post, text: "hi" });
    const res = await t.admin("GET", `/api/v1/posts/${post}?expand=author,comments&expand=tags`);
    expect(res.status).toBe(200);
    expect(res.body.author).toBe(ann);
    expect(res.body._expand.author).toMatchObject({ _id: ann, name: "Ann" });
    expect(res.body._expand.comments.map((c: any) => c._id)).toEqual([c1]);
    expect(res.body._expand.comments[0]).toMatchObject({ text: "hi", post });
    expect(res.body._expand.tags.map((x: any) => x.label)).toEqual(["a", "b"]);
  });

  test("an expanded record is the record as a read of its own collection returns it, its relation fields too", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "shelves" });
    await t.admin("POST", "/api/v1/admin/collections", { name: "books" });
    await rel({ from_col: "books", from_field: "shelf", to_col: "shelves", type: "one" });
    await rel({ from_col: "shelves", from_field: "books", to_col: "books", type: "many", to_field: "shelf" });
    await rel({ from_col: "shelves", from_field: "labels", to_col: "tags", type: "many_via" });
    const shelf = await create("shelves", { name: "top", labels: [tagB, tagA] });
    const book = await create("books", { title: "b", shelf });
    const direct = (await t.admin("GET", `/api/v1/shelves/${shelf}`)).body;
    expect(direct).toMatchObject({ books: [book], labels: [tagB, tagA] });
    const viaGet = await t.admin("GET", `/api/v1/books/${book}?expand=shelf`);
    expect(viaGet.body._expand.shelf).toEqual(direct);
    const viaList = await t.admin("GET", `/api/v1/books?expand=shelf&filter=_id:eq:${book}`);
    expect(viaList.body.items[0]._expand.shelf).toEqual(direct);
  });

  test("without expand there is no _expand key", async () => {
    const post = await create("posts", { title: "n", author: ann });
    expect((await t.admin("GET", `/api/v1/posts/${post}`)).body._expand).toBeUndefined();
  });

  test("a null, deleted or missing target expands to null, and a set_null delete clears the field", async () => {
    const gone = await create("authors", { name: "Gone" });
    const withNull = await create("posts", { title: "x1" });
    const withGone = await create("posts", { title: "x2", author: gone });
    expect((await t.admin("DELETE", `/api/v1/authors/${gone}`)).status).toBe(200);
    for (const id of [withNull, withGone]) {
      const res = await t.admin("GET", `/api/v1/posts/${id}?expand=author`);
      expect(res.body.author).toBeNull();
      expect(res.body._expand).toEqual({ author: null });
    }
  });

  test("a target collection the requester may not read expands to null, also for an admin-visible value", async () => {
    const user = await registerUser(t, "reader@example.com");
    const member = await create("members", { n: 1 });
    const post = await create("posts", { title: "s", secret: hidden, secretlist: [hidden], members: [member] });
    const asUser = await t.req("GET", `/api/v1/posts/${post}?expand=secret,secretlist,members`, { token: user.token });
    expect(asUser.status).toBe(200);
    expect(asUser.body.secret).toBe(hidden);
    expect(asUser.body._expand).toEqual({ secret: null, secretlist: null, members: [expect.objectContaining({ _id: member, n: 1 })] });
    const asAnon = await t.req("GET", `/api/v1/posts/${post}?expand=members`);
    expect(asAnon.status).toBe(200);
    expect(asAnon.body._expand).toEqual({ members: null });
    const admin = await t.admin("GET", `/api/v1/posts/${post}?expand=secret`);
    expect(admin.body._expand.secret).toMatchObject({ _id: hidden, code: "x" });
  });

  test("an owner read rule on the target shows only the requester's own targets", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "mine", rules: { read: "owner", create: "authenticated" } });
    await rel({ from_col: "posts", from_field: "mine", to_col: "mine", type: "one" });
    const u1 = await registerUser(t, "u1@example.com");
    const u2 = await registerUser(t, "u2@example.com");
    const m1 = await create("mine", { v: 1 }, u1.token);
    const post = await create("posts", { title: "o", mine: m1 }, u1.token);
    const own = await t.req("GET", `/api/v1/posts/${post}?expand=mine`, { token: u1.token });
    expect(own.body._expand.mine).toMatchObject({ _id: m1, v: 1 });
    const other = await t.req("GET", `/api/v1/posts/${post}?expand=mine`, { token: u2.token });
    expect(other.body._expand.mine).toBeNull();
  });

  test("an unknown expand name is 400 bad_request on get and list", async () => {
    const post = await create("posts", { title: "u" });
    for (const path of [`/api/v1/posts/${post}?expand=title`, "/api/v1/posts?expand=nothing"]) {
      const res = await t.admin("GET", path);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
    }
  });

  const CALLS = ["get", "all", "run", "exec"] as const;
  test("expand on a list of 50 costs one query per expanded field, however many records", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "bulkposts" });
    await rel({ from_col: "bulkposts", from_field: "author", to_col: "authors", type: "one" });
    await rel({ from_col: "bulkposts", from_field: "tags", to_col: "tags", type: "many_via" });
    await rel({ from_col: "comments", from_field: "bp", to_col: "bulkposts", type: "one" });
    await rel({ from_col: "bulkposts", from_field: "comments", to_col: "comments", type: "many" });
    for (let i = 0; i < 50; i++) {
      const id = await create("bulkposts", { i, author: i % 2 ? ann : bob, tags: i % 3 ? [tagA] : [tagA, tagB] });
      await create("comments", { bp: id, text: `c${i}` });
    }
    // Statements are counted where every one passes: the engine's get/all/run/exec.
    const db = t.db as unknown as Record<(typeof CALLS)[number], (sql: string, params?: unknown) => unknown>;
    const originals = Object.fromEntries(CALLS.map((k) => [k, db[k]])) as typeof db;
    let count = 0;
    // every statement but the cheap freshness checks of the catalog (SQLite: PRAGMA data_version,
    // PostgreSQL: the schema version in _meta with the snapshot); total=false because a repeated count is
    // answered from memory, which would make the first request differ
    const counted = (sql: string) => !/^\s*PRAGMA|'schema_version'|pg_current_snapshot\(\)/i.test(sql);
    for (const k of CALLS) db[k] = (sql, params) => (counted(sql) && count++, originals[k].call(t.db, sql, params));
    const measure = async (path: string) => {
      count = 0;
      const res = await t.admin("GET", path);
      expect(res.status).toBe(200);
      return { n: count, body: res.body };
    };
    try {
      const plain5 = await measure("/api/v1/bulkposts?limit=5&total=false");
      const plain50 = await measure("/api/v1/bulkposts?limit=50&total=false");
      const exp5 = await measure("/api/v1/bulkposts?limit=5&expand=author,tags,comments&total=false");
      const exp50 = await measure("/api/v1/bulkposts?limit=50&expand=author,tags,comments&total=false");
      expect(exp50.body.items.length).toBe(50);
      expect(exp50.body.items[1]._expand.author.name).toBe("Ann");
      expect(exp50.body.items[0]._expand.tags.length).toBe(2);
      expect(exp50.body.items[7]._expand.comments[0].text).toBe("c7");
      expect(plain50.n).toBe(plain5.n);
      expect(exp50.n).toBe(exp5.n);
      expect(exp50.n - plain50.n).toBe(3);
    } finally {
      Object.assign(db, originals);
    }
  });
});

describe("filters and fields on relation fields", () => {
  let p1 = "";
  let p2 = "";
  let p3 = "";
  beforeAll(async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "notes" });
    await t.admin("POST", "/api/v1/admin/collections", { name: "marks" });
    await t.admin("POST", "/api/v1/admin/collections", { name: "replies" });
    await rel({ from_col: "notes", from_field: "marks", to_col: "marks", type: "many_via" });
    await rel({ from_col: "notes", from_field: "writer", to_col: "authors", type: "one" });
    await rel({ from_col: "notes", from_field: "replies", to_col: "replies", type: "many", to_field: "note" });
    const m1 = await create("marks", { m: 1 });
    const m2 = await create("marks", { m: 2 });
    p1 = await create("notes", { n: 1, marks: [m1], writer: ann });
    p2 = await create("notes", { n: 2, marks: [m1, m2], writer: bob });
    p3 = await create("notes", { n: 3 });
    await create("replies", { note: p2 });
    (globalThis as any).marks = [m1, m2];
  });

  const ids = async (query: string) => {
    const res = await t.admin("GET", `/api/v1/notes?${query}`);
    expect(res.status).toBe(200);
    return res.body.items.map((r: any) => r._id);
  };

  test("filter=marks:eq:<id> lists the records linked to that id, and count agrees", async () => {
    const [m1, m2] = (globalThis as any).marks;
    expect(await ids(`filter=marks:eq:${m1}`)).toEqual([p1, p2]);
    expect(await ids(`filter=marks:eq:${m2}`)).toEqual([p2]);
    expect(await ids(`filter[marks]=${m2}`)).toEqual([p2]);
    expect(await ids(`filter=marks:ne:${m2}`)).toEqual([p1, p3]);
    expect(await ids(`filter=marks:in:${m2},nothing`)).toEqual([p2]);
    expect(await ids("filter=marks:eq:null")).toEqual([p3]);
    const count = await t.admin("GET", `/api/v1/notes/count?filter=marks:eq:${m1}`);
    expect(count.status).toBe(200);
    expect(count.body).toEqual({ total: 2 });
  });

  test("a many field filters by the records that point back", async () => {
    expect(await ids("filter=replies:ne:null")).toEqual([p2]);
  });

  test("an ordering operator on a relation list field is 400", async () => {
    const res = await t.admin("GET", "/api/v1/notes?filter=marks:gt:x");
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
  });

  test("fields can name virtual relation fields, and expand works on a field not selected", async () => {
    const res = await t.admin("GET", `/api/v1/notes?fields=n,marks&expand=writer&filter=n:eq:1`);
    expect(res.status).toBe(200);
    const [item] = res.body.items;
    expect(Object.keys(item).sort()).toEqual(["_expand", "_id", "marks", "n"]);
    expect(item._expand.writer).toMatchObject({ _id: ann, name: "Ann" });
    const plain = await t.admin("GET", `/api/v1/notes?fields=n&filter=n:eq:1`);
    expect(Object.keys(plain.body.items[0]).sort()).toEqual(["_id", "n"]);
  });
});
