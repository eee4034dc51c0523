import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// Responses stay bounded: group_by answers at most 1,000 groups, a many/many_via expand embeds at
// most 100 records per record, a many field lists at most 100 ids; the rest is paged through the list API.

let t: TestApp;
const pub = { read: "public", create: "public" };

async function bulk(name: string, rows: object[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < rows.length; i += 500) {
    const res = await t.admin("POST", `/api/v1/${name}/bulk`, rows.slice(i, i + 500));
    expect(res.status).toBe(201);
    ids.push(...res.body.map((r: { _id: string }) => r._id));
  }
  return ids;
}

beforeAll(async () => {
  t = createTestApp();
  for (const name of ["big", "posts", "comments", "tags"])
    expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: pub })).status).toBe(201);
  const relations = [
    { from_col: "comments", from_field: "post", to_col: "posts", type: "one" },
    { from_col: "posts", from_field: "comments", to_col: "comments", type: "many", to_field: "post" },
    { from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" },
  ];
  for (const r of relations) expect((await t.admin("POST", "/api/v1/admin/relations", r)).status).toBe(201);
});
afterAll(() => t.close());

describe("group_by is capped at 1,000 groups", () => {
  beforeAll(async () => {
    await bulk("big", Array.from({ length: 1001 }, (_, i) => ({ title: `t${String(i).padStart(4, "0")}`, n: i })));
  });

  test("1,001 groups are 400 with a message that says to filter, also for an anonymous client", async () => {
    const res = await t.req("GET", "/api/v1/big/aggregate?fn=count&group_by=title");
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'group_by "title" gives more than 1000 groups: narrow the records with a filter (or search) first',
      code: "bad_request",
    });
  });

  test("exactly 1,000 groups are answered in full", async () => {
    const res = await t.req("GET", "/api/v1/big/aggregate?fn=sum&field=n&group_by=title&filter=n:lt:1000");
    expect(res.status).toBe(200);
    expect(res.body.groups.length).toBe(1000);
    expect(res.body.groups[999]).toEqual({ group: "t0999", value: 999 });
  });
});

describe("many and many_via are capped at 100 records per record", () => {
  let post: string;
  let other: string;
  let comments: string[];
  let tags: string[];

  beforeAll(async () => {
    post = (await t.admin("POST", "/api/v1/posts", { title: "busy" })).body._id;
    other = (await t.admin("POST", "/api/v1/posts", { title: "quiet" })).body._id;
    comments = await bulk("comments", Array.from({ length: 150 }, (_, i) => ({ post, i })));
    await bulk("comments", [{ post: other, i: -1 }]);
    tags = await bulk("tags", Array.from({ length: 150 }, (_, i) => ({ label: `L${i}` })));
    // Linked in reverse order, so link order differs from id order.
    const linked = await t.admin("PATCH", `/api/v1/posts/${post}`, { tags: [...tags].reverse() });
    expect(linked.status).toBe(200);
  });

  test("a many field lists the first 100 readable ids by _id; its expand embeds those 100 records", async () => {
    const res = await t.req("GET", `/api/v1/posts/${post}?expand=comments`);
    expect(res.status).toBe(200);
    expect(res.body.comments).toEqual(comments.slice(0, 100));
    expect(res.body._expand.comments.map((c: { _id: string }) => c._id)).toEqual(comments.slice(0, 100));
  });

  test("the rest of a many relation pages through the list API from the 100th id", async () => {
    const rest = await t.req("GET", `/api/v1/comments?filter=post:eq:${post}&after=${comments[99]}&limit=500&fields=i`);
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((c: { _id: string }) => c._id)).toEqual(comments.slice(100));
    expect(rest.body.next_cursor).toBeNull();
  });

  test("many_via keeps every linked id in the field; expand embeds the first 100 in link order", async () => {
    const res = await t.req("GET", `/api/v1/posts/${post}?expand=tags`);
    const order = [...tags].reverse();
    expect(res.body.tags).toEqual(order);
    expect(res.body._expand.tags.map((x: { _id: string }) => x._id)).toEqual(order.slice(0, 100));
    const rest = await t.req("GET", `/api/v1/tags?filter=_id:in:${order.slice(100).join(",")}&limit=500`);
    expect(rest.body.items.length).toBe(50);
  });

  test("the cap is per record: on a list page each record gets its own 100", async () => {
    const res = await t.req("GET", "/api/v1/posts?expand=comments,tags&sort=title");
    expect(res.body.items.map((p: { title: string }) => p.title)).toEqual(["busy", "quiet"]);
    const [busy, quiet] = res.body.items;
    expect(busy._expand.comments.length).toBe(100);
    expect(busy._expand.tags.length).toBe(100);
    expect(quiet.comments.length).toBe(1);
    expect(quiet._expand.comments.map((c: { i: number }) => c.i)).toEqual([-1]);
    expect(quiet._expand.tags).toEqual([]);
  });
});
