import { expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";

// Any text a client sends comes back as sent, on every engine: PostgreSQL's text cannot hold a NUL
// character, so the engine stores it escaped (and its escape character too) and reads it back decoded.

const t = appPerTest(async (app) => {
  await createCollection(app, "notes", { read: "public", create: "public", update: "public", delete: "public" });
});

const values = ["\u0000", "a\u0000b", "\uE000", "\uE000\uE001", "\uE000\uE002", "x\u0000\uE000\u0000y", "plain"];

test("text with NUL or private-use characters is stored, read, filtered and listed verbatim", async () => {
  const ids: string[] = [];
  for (const title of values) {
    const res = await t.req("POST", "/api/v1/notes", { body: { title, meta: { title } } });
    expect(res.status).toBe(201);
    expect(res.body.title).toBe(title);
    ids.push(res.body._id);
  }
  for (const [i, title] of values.entries()) {
    const got = await t.req("GET", `/api/v1/notes/${ids[i]}`);
    expect(got.body.title).toBe(title);
    expect(got.body.meta).toEqual({ title });
    const found = await t.req("GET", `/api/v1/notes?filter=${encodeURIComponent(`title:eq:${title}`)}`);
    expect(found.status).toBe(200);
    expect(found.body.items.map((r: { _id: string }) => r._id)).toEqual([ids[i]]);
  }
  const list = await t.req("GET", "/api/v1/notes?limit=100");
  expect(list.body.items.map((r: { title: string }) => r.title).sort()).toEqual([...values].sort());
  const patched = await t.req("PATCH", `/api/v1/notes/${ids[6]}`, { body: { title: "p\u0000q" } });
  expect(patched.status).toBe(200);
  expect((await t.req("GET", `/api/v1/notes/${ids[6]}`)).body.title).toBe("p\u0000q");
});

test("a lone surrogate is answered as it is stored, U+FFFD, on create, update and bulk", async () => {
  // Sent as JSON escapes: JSON.parse makes strings that are not well-formed UTF-16.
  const created = await t.req("POST", "/api/v1/notes", { body: '{"title":"\\ud800x","other":"ok\\udc00"}' });
  expect(created.status).toBe(201);
  expect([created.body.title, created.body.other]).toEqual(["\ufffdx", "ok\ufffd"]);
  const id = created.body._id;
  expect((await t.req("GET", `/api/v1/notes/${id}`)).body).toEqual(created.body);
  const updated = await t.req("PATCH", `/api/v1/notes/${id}`, { body: '{"title":"y\\udbff"}' });
  expect(updated.body.title).toBe("y\ufffd");
  expect((await t.req("GET", `/api/v1/notes/${id}`)).body).toEqual(updated.body);
  const bulk = await t.req("POST", "/api/v1/notes/bulk", { body: '[{"title":"\\ud83d"},{"title":"\\ud83d\\ude00"}]' });
  expect(bulk.body.map((r: { title: string }) => r.title)).toEqual(["\ufffd", "\u{1f600}"]);
});
