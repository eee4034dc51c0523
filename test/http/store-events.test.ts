import { describe, expect, test } from "bun:test";
import { q } from "../../src/db/ident.ts";
import type { ChangeEvent } from "../../src/events/bus.ts";
import type { HookEvent, HookModule, HookName } from "../../src/hooks/types.ts";
import { appPerTest, createCollection, registerUser, type TestApp } from "../helpers/app.ts";

// Every write path of the record store: its hooks ran inside the transaction, and exactly one
// change event per changed record reached a bus subscriber after the commit.

interface Seen {
  event: ChangeEvent;
  inTx: boolean;
  /** The record as a fresh read started at delivery time sees it: the change is already committed. */
  stored: Promise<Record<string, unknown> | null>;
}

const hookLog: string[] = [];
/** When set, the hook with this name throws for the record whose `n` equals `failOn.n`. */
let failOn: { hook: HookName; n: number } | null = null;

const HOOKS: HookName[] = ["beforeCreate", "afterCreate", "beforeUpdate", "afterUpdate", "beforeDelete", "afterDelete", "beforeRestore", "afterRestore"];
let current: TestApp | null = null;

function recordingHook(): HookModule {
  const h: HookModule = { collection: "*" };
  for (const name of HOOKS) {
    h[name] = (e: HookEvent) => {
      const rec = (e.record ?? e.data) as Record<string, unknown>;
      if (!current!.db.inTransaction()) throw new Error(`${name} ran outside the transaction`);
      if (failOn && failOn.hook === name && rec?.n === failOn.n) throw new Error(`refused ${failOn.n}`);
      hookLog.push(`${name}:${e.op}:${e.collection}:${(e.record?._id as string) ?? "new"}`);
    };
  }
  return h;
}

const seen: Seen[] = [];
const hooks = { list: [recordingHook()] };
const t = appPerTest(
  async (app) => {
    current = app;
    hookLog.length = 0;
    seen.length = 0;
    failOn = null;
    app.ctx.events.subscribe((event) => {
      const stored = app.db.get(`SELECT "_id", "_deleted_at" FROM ${q(event.collection)} WHERE "_id" = ?`, [event.record._id as string]);
      stored.catch(() => {}); // a test that never looks at it must not end in an unhandled rejection
      seen.push({ event, inTx: app.db.inTransaction(), stored });
    });
    await createCollection(app, "posts", { read: "public", create: "authenticated", update: "owner", delete: "owner" });
  },
  () => ({ context: { hooks } }),
);

const api = (path: string) => `/api/v1${path}`;

async function adminGet(col: string, id: string) {
  const res = await t.admin("GET", api(`/${col}/${id}?include_deleted=true`));
  expect(res.status).toBe(200);
  return res.body;
}

async function make(col: string, body: Record<string, unknown>) {
  const res = await t.admin("POST", api(`/${col}`), body);
  expect(res.status).toBe(201);
  return res.body as Record<string, unknown>;
}

/** Clears what setup and earlier steps left, so a test sees only the operation under test. */
function reset() {
  hookLog.length = 0;
  seen.length = 0;
}

function expectDeliveredAfterCommit() {
  for (const s of seen) expect(s.inTx).toBe(false);
}

const summary = () => seen.map((s) => `${s.event.action}:${s.event.collection}:${s.event.record._id}`);

describe("single operations", () => {
  test("create runs beforeCreate and afterCreate and emits one create event, after commit, with the stored record", async () => {
    const u = await registerUser(t, "a@example.com");
    reset();
    const res = await t.req("POST", api("/posts"), { token: u.token, body: { title: "hi", n: 1 } });
    expect(res.status).toBe(201);
    const id = res.body._id;
    expect(hookLog).toEqual(["beforeCreate:create:posts:new", `afterCreate:create:posts:${id}`]);
    expect(seen.length).toBe(1);
    const { event } = seen[0];
    expect(event).toEqual({ collection: "posts", action: "create", record: await adminGet("posts", id), at: res.body._created_at, by: u.id });
    expect(await seen[0].stored).toEqual({ _id: id, _deleted_at: null });
    expectDeliveredAfterCommit();
  });

  test("update runs the update hooks and emits one update event with the record before and after", async () => {
    const u = await registerUser(t, "b@example.com");
    const created = (await t.req("POST", api("/posts"), { token: u.token, body: { title: "old", n: 1 } })).body;
    reset();
    const res = await t.req("PATCH", api(`/posts/${created._id}`), { token: u.token, body: { title: "new" } });
    expect(res.status).toBe(200);
    expect(hookLog).toEqual([`beforeUpdate:update:posts:${created._id}`, `afterUpdate:update:posts:${created._id}`]);
    expect(seen.map((s) => s.event)).toEqual([
      {
        collection: "posts",
        action: "update",
        record: await adminGet("posts", created._id),
        previous: created,
        at: expect.any(Number),
        by: u.id,
      },
    ]);
    expectDeliveredAfterCommit();
  });

  test("soft delete runs the delete hooks and emits one delete event carrying the soft-deleted record", async () => {
    const rec = await make("posts", { n: 1 });
    reset();
    const res = await t.admin("DELETE", api(`/posts/${rec._id}`));
    expect(res.status).toBe(200);
    expect(hookLog).toEqual([`beforeDelete:delete:posts:${rec._id}`, `afterDelete:delete:posts:${rec._id}`]);
    expect(seen.map((s) => s.event)).toEqual([
      { collection: "posts", action: "delete", record: res.body, previous: rec, at: res.body._deleted_at, by: "admin" },
    ]);
    expect((await seen[0].stored)!._deleted_at).toBe(res.body._deleted_at);
    expectDeliveredAfterCommit();
  });

  test("restore runs beforeRestore and afterRestore and emits one restore event; restoring an active record emits nothing", async () => {
    const rec = await make("posts", { n: 1 });
    const deleted = (await t.admin("DELETE", api(`/posts/${rec._id}`))).body;
    reset();
    const res = await t.admin("POST", api(`/posts/${rec._id}/restore`));
    expect(res.status).toBe(200);
    expect(res.body._deleted_at).toBeNull();
    expect(hookLog).toEqual([`beforeRestore:restore:posts:${rec._id}`, `afterRestore:restore:posts:${rec._id}`]);
    expect(seen.map((s) => s.event)).toEqual([
      { collection: "posts", action: "restore", record: res.body, previous: deleted, at: expect.any(Number), by: "admin" },
    ]);
    expect((await seen[0].stored)!._deleted_at).toBeNull();
    expectDeliveredAfterCommit();
    reset();
    expect((await t.admin("POST", api(`/posts/${rec._id}/restore`))).status).toBe(200);
    expect(hookLog).toEqual([]);
    expect(seen).toEqual([]);
  });

  test("a beforeRestore that throws keeps the record deleted and emits nothing", async () => {
    const rec = await make("posts", { n: 7 });
    await t.admin("DELETE", api(`/posts/${rec._id}`));
    reset();
    failOn = { hook: "beforeRestore", n: 7 };
    const res = await t.admin("POST", api(`/posts/${rec._id}/restore`));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "refused 7", code: "hook_rejected" });
    expect((await adminGet("posts", rec._id as string))._deleted_at).not.toBeNull();
    expect(seen).toEqual([]);
  });

  test("hard delete runs the delete hooks and emits one hard_delete event carrying the last state", async () => {
    const rec = await make("posts", { n: 1 });
    const last = await adminGet("posts", rec._id as string);
    reset();
    const res = await t.admin("DELETE", api(`/admin/collections/posts/records/${rec._id}`));
    expect(res.status).toBe(200);
    expect(hookLog).toEqual([`beforeDelete:delete:posts:${rec._id}`, `afterDelete:delete:posts:${rec._id}`]);
    expect(seen.map((s) => s.event)).toEqual([
      { collection: "posts", action: "hard_delete", record: last, previous: last, at: expect.any(Number), by: "admin" },
    ]);
    expect(await seen[0].stored).toBeNull();
    expectDeliveredAfterCommit();
  });

  test("an update a hook rejects emits nothing", async () => {
    const rec = await make("posts", { n: 3 });
    reset();
    failOn = { hook: "afterUpdate", n: 3 };
    const res = await t.admin("PATCH", api(`/posts/${rec._id}`), { title: "x" });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("hook_rejected");
    expect(seen).toEqual([]);
  });
});

describe("bulk and batch", () => {
  test("bulk emits one create event per record, in order, after commit", async () => {
    reset();
    const res = await t.admin("POST", api("/posts/bulk"), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(res.status).toBe(201);
    const ids = (res.body.records ?? res.body).map((r: { _id: string }) => r._id);
    expect(ids.length).toBe(3);
    expect(summary()).toEqual(ids.map((id: string) => `create:posts:${id}`));
    expect(hookLog.filter((l) => l.startsWith("afterCreate")).length).toBe(3);
    expectDeliveredAfterCommit();
  });

  test("a bulk failing at its 300th record saves nothing and emits no event", async () => {
    reset();
    failOn = { hook: "beforeCreate", n: 299 };
    const body = Array.from({ length: 400 }, (_, i) => ({ n: i }));
    const res = await t.admin("POST", api("/posts/bulk"), body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "refused 299", code: "hook_rejected", index: 299 });
    expect(hookLog.filter((l) => l.startsWith("afterCreate")).length).toBe(299);
    expect(seen).toEqual([]);
    expect((await t.admin("GET", api("/posts/count"))).body).toEqual({ total: 0 });
  });

  test("a batch emits one event per operation, in order, after commit", async () => {
    const a = await make("posts", { n: 1 });
    const b = await make("posts", { n: 2 });
    reset();
    const res = await t.admin("POST", api("/posts/batch"), {
      operations: [
        { op: "create", data: { n: 3 } },
        { op: "update", id: a._id, data: { title: "t" } },
        { op: "delete", id: b._id },
      ],
    });
    expect(res.status).toBe(200);
    const created = res.body.results[0].record._id;
    expect(summary()).toEqual([`create:posts:${created}`, `update:posts:${a._id}`, `delete:posts:${b._id}`]);
    expect(hookLog).toEqual([
      "beforeCreate:create:posts:new",
      `afterCreate:create:posts:${created}`,
      `beforeUpdate:update:posts:${a._id}`,
      `afterUpdate:update:posts:${a._id}`,
      `beforeDelete:delete:posts:${b._id}`,
      `afterDelete:delete:posts:${b._id}`,
    ]);
    expectDeliveredAfterCommit();
  });

  test("a batch failing at its 5th operation emits no event, though operations 1 to 4 ran their hooks", async () => {
    const a = await make("posts", { n: 1 });
    reset();
    const res = await t.admin("POST", api("/posts/batch"), {
      operations: [
        { op: "create", data: { n: 10 } },
        { op: "create", data: { n: 11 } },
        { op: "update", id: a._id, data: { title: "t" } },
        { op: "delete", id: a._id },
        { op: "update", id: "missing", data: { title: "x" } },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "operation 4 (update): record not found", code: "batch_failed", index: 4, op: "update" });
    expect(hookLog.length).toBe(8);
    expect(seen).toEqual([]);
    expect(await adminGet("posts", a._id as string)).toEqual(a);
  });
});

describe("relation cascades", () => {
  async function relate(onDelete: string) {
    await createCollection(t, "authors");
    await createCollection(t, "books");
    const rel = await t.admin("POST", api("/admin/relations"), { from_col: "books", from_field: "author", to_col: "authors", type: "one", on_delete: onDelete });
    expect(rel.status).toBe(201);
    const author = await make("authors", { name: "A" });
    const b1 = await make("books", { author: author._id, n: 1 });
    const b2 = await make("books", { author: author._id, n: 2 });
    reset();
    return { author: author._id as string, books: [b1._id as string, b2._id as string] };
  }

  /**
   * The target's own event comes first, then one `action` event per book, each after the book's
   * `op` hooks ran, carrying the book as an admin reads it now (a hard-deleted one: gone).
   */
  async function expectCascaded(first: string, action: string, op: string, books: string[]) {
    expect(summary()).toEqual([first, ...books.map((id) => `${action}:books:${id}`)]);
    const name = op[0].toUpperCase() + op.slice(1);
    for (const id of books) {
      expect(hookLog).toContain(`before${name}:${op}:books:${id}`);
      expect(hookLog).toContain(`after${name}:${op}:books:${id}`);
      const ev = seen.find((s) => s.event.record._id === id)!;
      if (action === "hard_delete") expect(await ev.stored).toBeNull();
      else expect(ev.event.record).toEqual(await adminGet("books", id));
    }
    expectDeliveredAfterCommit();
  }

  test("a soft cascade runs each pointing record's delete hooks and emits one delete event per record", async () => {
    const { author, books } = await relate("cascade");
    expect((await t.admin("DELETE", api(`/authors/${author}`))).status).toBe(200);
    await expectCascaded(`delete:authors:${author}`, "delete", "delete", books);
    for (const id of books) expect((await adminGet("books", id))._deleted_at).not.toBeNull();
  });

  test("restoring the target restores its cascade with restore hooks and one restore event per record", async () => {
    const { author, books } = await relate("cascade");
    await t.admin("DELETE", api(`/authors/${author}`));
    reset();
    expect((await t.admin("POST", api(`/authors/${author}/restore`))).status).toBe(200);
    await expectCascaded(`restore:authors:${author}`, "restore", "restore", books);
    for (const id of books) expect((await adminGet("books", id))._deleted_at).toBeNull();
  });

  test("a hard cascade runs the delete hooks and emits one hard_delete event per record", async () => {
    const { author, books } = await relate("cascade");
    expect((await t.admin("DELETE", api(`/admin/collections/authors/records/${author}`))).status).toBe(200);
    await expectCascaded(`hard_delete:authors:${author}`, "hard_delete", "delete", books);
  });

  test("set_null runs each pointing record's update hooks and emits one update event per record", async () => {
    const { author, books } = await relate("set_null");
    expect((await t.admin("DELETE", api(`/authors/${author}`))).status).toBe(200);
    await expectCascaded(`delete:authors:${author}`, "update", "update", books);
    for (const id of books) {
      const ev = seen.find((s) => s.event.record._id === id)!.event;
      expect(ev.record.author).toBeNull();
      expect(ev.previous!.author).toBe(author);
    }
  });

  test("many_via: the links a delete removes and its restore puts back are updates of each holder", async () => {
    await createCollection(t, "tags");
    await createCollection(t, "articles");
    const rel = await t.admin("POST", api("/admin/relations"), { from_col: "articles", from_field: "tags", to_col: "tags", type: "many_via", on_delete: "cascade" });
    expect(rel.status).toBe(201);
    const [x, y] = [(await make("tags", { n: 1 }))._id as string, (await make("tags", { n: 2 }))._id as string];
    const art = (await make("articles", { tags: [x, y] }))._id as string;
    reset();
    expect((await t.admin("DELETE", api(`/tags/${x}`))).status).toBe(200);
    expect(summary()).toEqual([`delete:tags:${x}`, `update:articles:${art}`]);
    expect(hookLog).toContain(`beforeUpdate:update:articles:${art}`);
    expect(seen[1].event.previous!.tags).toEqual([x, y]);
    expect(seen[1].event.record).toEqual(await adminGet("articles", art));
    expect(seen[1].event.record.tags).toEqual([y]);
    reset();
    expect((await t.admin("POST", api(`/tags/${x}/restore`))).status).toBe(200);
    expect(summary()).toEqual([`restore:tags:${x}`, `update:articles:${art}`]);
    expect(seen[1].event.record.tags).toEqual([x, y]);
    expect(hookLog).toContain(`afterUpdate:update:articles:${art}`);
    expectDeliveredAfterCommit();
  });

  test("a hook refusing a cascaded delete rolls everything back and emits nothing", async () => {
    const { author, books } = await relate("cascade");
    failOn = { hook: "beforeDelete", n: 2 };
    const res = await t.admin("DELETE", api(`/authors/${author}`));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "refused 2", code: "hook_rejected" });
    expect(seen).toEqual([]);
    for (const id of books) expect((await adminGet("books", id))._deleted_at).toBeNull();
  });
});
