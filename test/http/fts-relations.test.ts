import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// Full-text search indexes the words people search for: the text fields, but not the fields that hold record ids
// (a `one` relation's field, and the field of a `many` relation's target naming its parent). Both engines.

let t: TestApp;
const C = "/api/v1/admin/collections";

beforeAll(async () => {
  t = createTestApp();
  for (const name of ["authors", "posts", "comments"]) expect((await t.admin("POST", C, { name, rules: { read: "public" } })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "author", to_col: "authors", type: "one" })).status).toBe(201);
  expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "comments", to_col: "comments", type: "many", to_field: "post" })).status).toBe(201);
}, 60_000);
afterAll(() => t.close());

test("relation id fields are not indexed, when full text is enabled before or after they first appear", async () => {
  const ada = (await t.admin("POST", "/api/v1/authors", { name: "Ada" })).body;
  const post = (await t.admin("POST", "/api/v1/posts", { title: "engines", author: ada._id })).body;
  expect((await t.admin("POST", "/api/v1/comments", { text: "lovely", post: post._id })).status).toBe(201);
  const posts = await t.admin("POST", `${C}/posts/fts`);
  expect(posts.body.fields).toEqual(["title"]);
  // The comments' `post` field appears before full text is enabled; a later field of the same kind after.
  expect((await t.admin("POST", `${C}/comments/fts`)).body.fields).toEqual(["text"]);
  expect((await t.admin("GET", `/api/v1/posts?search=${encodeURIComponent(ada._id)}`)).body.items).toEqual([]);
  expect((await t.admin("GET", `/api/v1/comments?search=${encodeURIComponent(post._id)}`)).body.items).toEqual([]);
  expect((await t.admin("GET", "/api/v1/posts?search=engines")).body.items.map((p: { _id: string }) => p._id)).toEqual([post._id]);
  expect((await t.admin("POST", "/api/v1/admin/relations", { from_col: "comments", from_field: "reply_to", to_col: "comments", type: "one" })).status).toBe(201);
  const first = (await t.admin("GET", "/api/v1/comments")).body.items[0];
  expect((await t.admin("POST", "/api/v1/comments", { text: "agreed", note: "see above", reply_to: first._id })).status).toBe(201);
  expect((await t.admin("GET", `${C}/comments/fts`)).body.fields).toEqual(["text", "note"]);
  expect((await t.admin("GET", `/api/v1/comments?search=${encodeURIComponent(first._id)}`)).body.items).toEqual([]);
});
