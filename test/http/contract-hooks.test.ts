import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { appPerTest, createCollection, registerUser } from "../helpers/app.ts";

// CONTRACT §5 sentence by sentence: what every handler receives on every path, and what a throw
// answers on the paths the other hook tests leave open (hard delete, restore, cascade, set_null).

const hooksDir = mkdtempSync(join(tmpdir(), "baas-contract-hooks-"));
writeFileSync(
  join(hooksDir, "record-all.js"),
  `const names = ["beforeCreate", "afterCreate", "beforeUpdate", "afterUpdate", "beforeDelete", "afterDelete", "beforeRestore", "afterRestore"];
const hook = { collection: "*" };
for (const name of names)
  hook[name] = (e) => {
    globalThis.__contractHookLog.push({ name, event: JSON.parse(JSON.stringify(e)) });
    const rec = e.record ?? e.data ?? {};
    if (rec.refuse === name) throw { status: 409, message: "refused in " + name };
    if (rec.title === "refuse " + name) throw new Error("refused in " + name);
    if (rec.invalid === name) throw Object.assign(new Error("not valid in " + name), { status: 422 });
    if (rec.invalidField === name) throw { status: 422, message: "x", errors: [{ field: "title", rule: "custom", message: "title is taken" }] };
  };
hook.onCommit = (event) => {
  globalThis.__contractCommitLog.push(event);
};
export default hook;
`,
);

writeFileSync(
  join(hooksDir, "async.js"),
  `export default { collection: "drafts", async beforeCreate(e) { await new Promise((r) => setTimeout(r, 1)); e.data.late = true; } };
`,
);

const log: { name: string; event: Record<string, any> }[] = [];
const commits: Record<string, any>[] = [];
Object.assign(globalThis, { __contractHookLog: log, __contractCommitLog: commits });
const hooks = await loadHooks(hooksDir);
afterAll(() => rmSync(hooksDir, { recursive: true, force: true }));

const t = appPerTest(
  async (app) => {
    await createCollection(app, "posts", { read: "public", create: "public", update: "public", delete: "public" });
    log.length = 0;
    commits.length = 0;
  },
  { context: { hooks } },
);

const api = (path: string) => `/api/v1${path}`;
const ADMIN = { kind: "admin", id: null, roles: [] };
const ANON = { kind: "anonymous", id: null, roles: [] };
/** The events the handlers got, in order, as [handler, event]; the log starts over. */
function take() {
  const out = log.map((l): [string, Record<string, any>] => [l.name, l.event]);
  log.length = 0;
  return out;
}

/** authors; books.author → authors with cascade; notes.author → authors with set_null. */
async function authorsBooksNotes() {
  for (const name of ["authors", "books", "notes"]) await createCollection(t, name);
  const rel = (from: string, on_delete: string) =>
    t.admin("POST", api("/admin/relations"), { from_col: from, from_field: "author", to_col: "authors", type: "one", on_delete });
  expect((await rel("books", "cascade")).status).toBe(201);
  expect((await rel("notes", "set_null")).status).toBe(201);
}

describe("each handler gets { collection, op, data, record, previous, auth }", () => {
  test("create, update, soft delete, restore and hard delete by a user, an anonymous caller and the admin", async () => {
    const u = await registerUser(t, "ann@example.com");
    const user = { kind: "user", id: u.id, roles: [] };
    log.length = 0;

    const c = await t.req("POST", api("/posts"), { token: u.token, body: { title: "a" } });
    expect(c.status).toBe(201);
    expect(take()).toEqual([
      ["beforeCreate", { collection: "posts", op: "create", data: { title: "a" }, record: null, previous: null, auth: user }],
      ["afterCreate", { collection: "posts", op: "create", data: { title: "a" }, record: c.body, previous: null, auth: user }],
    ]);

    const up = await t.req("PATCH", api(`/posts/${c.body._id}`), { body: { title: "b" } });
    expect(up.status).toBe(200);
    expect(take()).toEqual([
      ["beforeUpdate", { collection: "posts", op: "update", data: { title: "b" }, record: c.body, previous: c.body, auth: ANON }],
      ["afterUpdate", { collection: "posts", op: "update", data: { title: "b" }, record: up.body, previous: c.body, auth: ANON }],
    ]);

    const del = await t.admin("DELETE", api(`/posts/${c.body._id}`));
    expect(del.status).toBe(200);
    expect(take()).toEqual([
      ["beforeDelete", { collection: "posts", op: "delete", data: null, record: up.body, previous: up.body, auth: ADMIN }],
      ["afterDelete", { collection: "posts", op: "delete", data: null, record: del.body, previous: up.body, auth: ADMIN }],
    ]);

    const res = await t.req("POST", api(`/posts/${c.body._id}/restore`), { token: u.token });
    expect(res.status).toBe(200);
    expect(take()).toEqual([
      ["beforeRestore", { collection: "posts", op: "restore", data: null, record: del.body, previous: del.body, auth: user }],
      ["afterRestore", { collection: "posts", op: "restore", data: null, record: res.body, previous: del.body, auth: user }],
    ]);

    expect((await t.admin("DELETE", api(`/admin/collections/posts/records/${c.body._id}`))).status).toBe(200);
    expect(take()).toEqual([
      ["beforeDelete", { collection: "posts", op: "delete", data: null, record: res.body, previous: res.body, auth: ADMIN }],
      ["afterDelete", { collection: "posts", op: "delete", data: null, record: res.body, previous: res.body, auth: ADMIN }],
    ]);
  });

  test("a cascade runs the pointing record's delete handlers; set_null its update handlers with data { field: null }", async () => {
    await authorsBooksNotes();
    const a = await t.admin("POST", api("/authors"), { name: "x" });
    const b = await t.admin("POST", api("/books"), { author: a.body._id });
    const n = await t.admin("POST", api("/notes"), { author: a.body._id });
    log.length = 0;
    expect((await t.admin("DELETE", api(`/authors/${a.body._id}`))).status).toBe(200);
    const seen = take();
    const book = seen.filter(([, e]) => e.collection === "books");
    expect(book.map(([name, e]) => [name, e.op, e.data, e.previous, e.auth])).toEqual([
      ["beforeDelete", "delete", null, b.body, ADMIN],
      ["afterDelete", "delete", null, b.body, ADMIN],
    ]);
    expect(book[1][1].record).toMatchObject({ _id: b.body._id, _deleted_at: expect.any(Number) });
    const note = seen.filter(([, e]) => e.collection === "notes");
    expect(note.map(([name, e]) => [name, e.op, e.data, e.previous, e.auth])).toEqual([
      ["beforeUpdate", "update", { author: null }, n.body, ADMIN],
      ["afterUpdate", "update", { author: null }, n.body, ADMIN],
    ]);
    expect(note[1][1].record).toEqual({ ...n.body, author: null, _updated_at: expect.any(Number) });
    // The author's own handlers ran around them.
    expect(seen.filter(([, e]) => e.collection === "authors").map(([name]) => name)).toEqual(["beforeDelete", "afterDelete"]);
  });
});

describe("a throw on every path rolls the whole operation back", () => {
  test("hard delete: 400 hook_rejected with the message; the record stays", async () => {
    const c = await t.admin("POST", api("/posts"), { title: "refuse beforeDelete" });
    const res = await t.admin("DELETE", api(`/admin/collections/posts/records/${c.body._id}`));
    expect(res).toMatchObject({ status: 400, body: { error: "refused in beforeDelete", code: "hook_rejected" } });
    expect((await t.req("GET", api(`/posts/${c.body._id}`))).body).toEqual(c.body);
  });

  test("restore: afterRestore's thrown status answers, the record stays deleted", async () => {
    const c = await t.admin("POST", api("/posts"), { refuse: "afterRestore" });
    expect((await t.admin("DELETE", api(`/posts/${c.body._id}`))).status).toBe(200);
    const res = await t.admin("POST", api(`/posts/${c.body._id}/restore`));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "refused in afterRestore", code: "hook_rejected" });
    expect((await t.req("GET", api(`/posts/${c.body._id}`))).status).toBe(404);
  });

  test("cascade and set_null: a pointing record's handler refusing rolls the target's delete back", async () => {
    await authorsBooksNotes();
    const a1 = await t.admin("POST", api("/authors"), { name: "one" });
    const a2 = await t.admin("POST", api("/authors"), { name: "two" });
    const b = await t.admin("POST", api("/books"), { author: a1.body._id, refuse: "afterDelete" });
    const n = await t.admin("POST", api("/notes"), { author: a2.body._id, refuse: "beforeUpdate" });

    const cascade = await t.admin("DELETE", api(`/authors/${a1.body._id}`));
    expect(cascade).toMatchObject({ status: 409, body: { error: "refused in afterDelete", code: "hook_rejected" } });
    expect((await t.req("GET", api(`/authors/${a1.body._id}`))).status).toBe(200);
    expect((await t.req("GET", api(`/books/${b.body._id}`))).body).toEqual(b.body);

    const setNull = await t.admin("DELETE", api(`/admin/collections/authors/records/${a2.body._id}`));
    expect(setNull).toMatchObject({ status: 409, body: { error: "refused in beforeUpdate", code: "hook_rejected" } });
    expect((await t.req("GET", api(`/authors/${a2.body._id}`))).status).toBe(200);
    expect((await t.req("GET", api(`/notes/${n.body._id}`))).body).toEqual(n.body);
  });
});

test("a thrown status: bulk answers it with the record's index; a batch is always 400 batch_failed naming the operation", async () => {
  const bulk = await t.admin("POST", api("/posts/bulk"), [{ title: "ok" }, { refuse: "beforeCreate" }]);
  expect(bulk.status).toBe(409);
  expect(bulk.body).toEqual({ error: "refused in beforeCreate", code: "hook_rejected", index: 1 });
  const kept = await t.admin("POST", api("/posts"), { title: "kept" });
  const batch = await t.admin("POST", api("/posts/batch"), {
    operations: [
      { op: "create", data: { title: "ok" } },
      { op: "update", id: kept.body._id, data: { refuse: "afterUpdate" } },
    ],
  });
  expect(batch.status).toBe(400);
  expect(batch.body).toEqual({ error: "operation 1 (update): refused in afterUpdate", code: "batch_failed", index: 1, op: "update" });
  const list = await t.admin("GET", api("/posts"));
  expect(list.body.items).toEqual([kept.body]);
  expect(commits.map((e) => e.record.title)).toEqual(["kept"]);
});

test("handlers may be async (CONTRACT §15): the write waits for one, and what it put in data is saved", async () => {
  await createCollection(t, "drafts");
  const res = await t.admin("POST", api("/drafts"), { title: "x" });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ title: "x", late: true });
  expect((await t.admin("GET", api(`/drafts/${res.body._id}`))).body.late).toBe(true);
});

describe("onCommit gets the change event of section 10", () => {
  test("{ collection, action, record } for every change; a hard delete is a delete of { _id }, its last state in previous", async () => {
    const c = await t.admin("POST", api("/posts"), { title: "a" });
    const u = await t.admin("PATCH", api(`/posts/${c.body._id}`), { title: "b" });
    const d = await t.admin("DELETE", api(`/posts/${c.body._id}`));
    const r = await t.admin("POST", api(`/posts/${c.body._id}/restore`));
    expect((await t.admin("DELETE", api(`/admin/collections/posts/records/${c.body._id}`))).status).toBe(200);
    const at = expect.any(Number);
    expect(commits).toEqual([
      { collection: "posts", action: "create", record: c.body, at, by: "admin" },
      { collection: "posts", action: "update", record: u.body, previous: c.body, at, by: "admin" },
      { collection: "posts", action: "delete", record: d.body, previous: u.body, at, by: "admin" },
      { collection: "posts", action: "restore", record: r.body, previous: d.body, at, by: "admin" },
      { collection: "posts", action: "delete", record: { _id: c.body._id }, previous: r.body, hard: true, at, by: "admin" },
    ]);
  });
});

test("a hook throwing status 422 answers 422 in its own shape: its errors, or one entry with its message under rule hook", async () => {
  const plain = await t.req("POST", api("/posts"), { body: { invalid: "beforeCreate" } });
  expect({ status: plain.status, body: plain.body }).toEqual({ status: 422, body: { errors: [{ field: "", rule: "hook", message: "not valid in beforeCreate" }] } });
  const listed = await t.req("POST", api("/posts"), { body: { invalidField: "beforeCreate" } });
  expect({ status: listed.status, body: listed.body }).toEqual({ status: 422, body: { errors: [{ field: "title", rule: "custom", message: "title is taken" }] } });
  expect((await t.admin("GET", api("/posts"))).body.total).toBe(0);
});
