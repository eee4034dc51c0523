import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";

const hooksDir = mkdtempSync(join(tmpdir(), "baas-hooks-"));

// A hook file as a user writes it, loaded from disk through loadHooks like `baas serve` does.
writeFileSync(
  join(hooksDir, "posts.ts"),
  `import { slugify } from "./_slug.ts";
export default {
  collection: "posts",
  beforeCreate(e: { data: Record<string, any>; auth: { id: string | null } }) {
    if (e.data.title === "forbidden") throw new Error("titles may not be forbidden");
    if (e.data.title === "teapot") throw { status: 418, message: "short and stout" };
    if (typeof e.data.title === "string") e.data.slug = slugify(e.data.title);
    e.data.created_by = e.auth.id ?? "admin";
  },
  afterCreate(e: { record: Record<string, any> }) {
    if (e.record.title === "explode after") throw new Error("after-create refused");
  },
  beforeUpdate(e: { data: Record<string, any>; previous: Record<string, any> }) {
    if (e.previous.locked) throw new Error("this post is locked");
    if ("title" in e.data) e.data = { ...e.data, edited: true };
  },
  beforeDelete(e: { record: Record<string, any> }) {
    if (e.record.pinned) throw new Error("pinned posts cannot be deleted");
  },
};
`,
);
writeFileSync(join(hooksDir, "_slug.ts"), `export const slugify = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-");\n`);
writeFileSync(
  join(hooksDir, "zz-all.js"),
  `export default { collection: "*", afterUpdate(e) { globalThis.__baasHookLog?.push(e.collection + ":" + e.op); } };\n`,
);

let hooks: Awaited<ReturnType<typeof loadHooks>>;
const log: string[] = [];
beforeAll(async () => {
  (globalThis as { __baasHookLog?: string[] }).__baasHookLog = log;
  hooks = await loadHooks(hooksDir);
});
afterAll(() => rmSync(hooksDir, { recursive: true, force: true }));

// Every test gets its own app (with the hooks loaded once) with "posts" and "other", and an empty hook log.
const t = appPerTest(
  async (t) => {
    log.length = 0;
    for (const name of ["posts", "other"]) await createCollection(t, name);
  },
  () => ({ context: { hooks } }),
);

describe("lifecycle hooks on single operations", () => {
  test("beforeCreate mutates the data that is stored", async () => {
    const res = await t.admin("POST", "/api/v1/posts", { title: "Hello World" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ title: "Hello World", slug: "hello-world", created_by: "admin" });
    expect((await t.admin("GET", `/api/v1/posts/${res.body._id}`)).body.slug).toBe("hello-world");
  });

  test("a throw is 400 hook_rejected with the message and nothing is saved", async () => {
    const before = await countRows(t, "posts");
    const res = await t.admin("POST", "/api/v1/posts", { title: "forbidden", brand_new_field: 1 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "titles may not be forbidden", code: "hook_rejected" });
    expect(await countRows(t, "posts")).toBe(before);
    expect((await t.admin("GET", "/api/v1/admin/collections/posts")).body.fields.map((f: { name: string }) => f.name)).not.toContain(
      "brand_new_field",
    );
  });

  test("a thrown object's status is the answer's status", async () => {
    const res = await t.admin("POST", "/api/v1/posts", { title: "teapot" });
    expect(res.status).toBe(418);
    expect(res.body).toEqual({ error: "short and stout", code: "hook_rejected" });
  });

  test("a throw in afterCreate rolls the insert back", async () => {
    const before = await countRows(t, "posts");
    const res = await t.admin("POST", "/api/v1/posts", { title: "explode after" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "after-create refused", code: "hook_rejected" });
    expect(await countRows(t, "posts")).toBe(before);
  });

  test("beforeUpdate may replace event.data, and a '*' hook runs for every collection", async () => {
    const made = await t.admin("POST", "/api/v1/posts", { title: "first" });
    const res = await t.admin("PATCH", `/api/v1/posts/${made.body._id}`, { title: "second" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ title: "second", edited: true });
    const other = await t.admin("POST", "/api/v1/other", { v: 1 });
    await t.admin("PATCH", `/api/v1/other/${other.body._id}`, { v: 2 });
    expect(log).toEqual(["posts:update", "other:update"]);
  });

  test("beforeUpdate and beforeDelete can refuse", async () => {
    const locked = await t.admin("POST", "/api/v1/posts", { title: "locked one", locked: true, pinned: true });
    const upd = await t.admin("PATCH", `/api/v1/posts/${locked.body._id}`, { title: "changed" });
    expect(upd.status).toBe(400);
    expect(upd.body).toEqual({ error: "this post is locked", code: "hook_rejected" });
    const del = await t.admin("DELETE", `/api/v1/posts/${locked.body._id}`);
    expect(del.status).toBe(400);
    expect(del.body).toEqual({ error: "pinned posts cannot be deleted", code: "hook_rejected" });
    expect((await t.admin("GET", `/api/v1/posts/${locked.body._id}`)).body).toMatchObject({ title: "locked one", _deleted_at: null });
  });
});

describe("lifecycle hooks in bulk and batch", () => {
  test("bulk runs beforeCreate for every record", async () => {
    const res = await t.admin("POST", "/api/v1/posts/bulk", [{ title: "A b" }, { title: "C d" }]);
    expect(res.status).toBe(201);
    expect(res.body.map((r: { slug: string }) => r.slug)).toEqual(["a-b", "c-d"]);
  });

  test("a hook throw in bulk rolls back every record and names the index", async () => {
    const before = await countRows(t, "posts");
    const res = await t.admin("POST", "/api/v1/posts/bulk", [{ title: "fine" }, { title: "also fine" }, { title: "forbidden" }]);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "titles may not be forbidden", code: "hook_rejected", index: 2 });
    expect(await countRows(t, "posts")).toBe(before);
  });

  test("batch runs hooks per operation and mutations show in the results", async () => {
    const made = await t.admin("POST", "/api/v1/posts", { title: "to edit" });
    const res = await t.admin("POST", "/api/v1/posts/batch", {
      operations: [
        { op: "create", data: { title: "Batch One" } },
        { op: "update", id: made.body._id, data: { title: "edited" } },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.results[0].record.slug).toBe("batch-one");
    expect(res.body.results[1].record).toMatchObject({ title: "edited", edited: true });
  });

  test("a hook throw inside a batch is batch_failed with the hook's message, and earlier operations roll back", async () => {
    const before = await countRows(t, "posts");
    const res = await t.admin("POST", "/api/v1/posts/batch", {
      operations: [
        { op: "create", data: { title: "kept?" } },
        { op: "create", data: { title: "forbidden" } },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: "operation 1 (create): titles may not be forbidden",
      code: "batch_failed",
      index: 1,
      op: "create",
    });
    expect(await countRows(t, "posts")).toBe(before);
  });
});

describe("loading hook files", () => {
  test("a missing directory means no hooks", async () => {
    expect(await loadHooks(join(hooksDir, "nope"))).toEqual({ list: [] });
  });

  test("helpers starting with _ are not loaded as hooks, and a '*' hook is kept", async () => {
    const set = await loadHooks(hooksDir);
    expect(set.list.map((h) => h.collection)).toEqual(["posts", "*"]);
  });

  test("a file without a proper default export, or with a misspelt handler, is refused at start", async () => {
    const bad = mkdtempSync(join(tmpdir(), "baas-badhooks-"));
    try {
      const only = (name: string, text: string) => {
        rmSync(bad, { recursive: true, force: true });
        mkdirSync(bad);
        writeFileSync(join(bad, name), text);
      };
      only("a.ts", "export const x = 1;\n");
      await expect(loadHooks(bad)).rejects.toThrow(/must default-export/);
      only("b.ts", `export default { collection: "posts", beforeCreated() {} };\n`);
      await expect(loadHooks(bad)).rejects.toThrow(/unknown key "beforeCreated"/);
      only("c.ts", "export default { collection: ");
      await expect(loadHooks(bad)).rejects.toThrow(/failed to load/);
      only("d.ts", `export default [{ collection: "a", afterDelete() {} }, { collection: "b" }];\n`);
      expect((await loadHooks(bad)).list.map((h) => h.collection)).toEqual(["a", "b"]);
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });

  test("the example hook shipped in docs loads and works", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baas-example-hook-"));
    try {
      copyFileSync(join(import.meta.dir, "../../docs/hooks-example.ts"), join(dir, "posts.ts"));
      const [hook] = (await loadHooks(dir)).list;
      expect(hook.collection).toBe("posts");
      const event = { collection: "posts", op: "create" as const, data: { title: "Héllo World" } as Record<string, unknown>, record: null, previous: null, auth: { kind: "admin" as const, id: null, roles: [] } };
      hook.beforeCreate!(event);
      expect(event.data).toEqual({ title: "Héllo World", slug: "hello-world", status: "draft" });
      expect(() => hook.beforeCreate!({ ...event, data: { title: " " } })).toThrow("a post needs a title");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
