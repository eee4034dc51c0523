import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { reloadHooks, watchHooks } from "../../src/ops/hook-files.ts";
import { createCollection, createTestApp, registerUser, type TestApp } from "../helpers/app.ts";
import { waitFor } from "../helpers/wait.ts";

// Hooks reload (CONTRACT §15): POST /admin/hooks/reload and changes on disk load the hook files again; a file
// that fails to load keeps its previous version (and says why); onCommit handlers follow the reload.

const dir = mkdtempSync(join(tmpdir(), "baas-reload-"));
const log: string[] = [];

/** A hook file for "posts" stamping each new record with `version`, and logging each commit. */
const postsFile = (version: number) => `export default {
  collection: "posts",
  beforeCreate(e) { e.data.version = ${version}; },
  onCommit(e) { globalThis.__baasReloadLog?.push("v${version}:" + e.action); },
};
`;
writeFileSync(join(dir, "posts.js"), postsFile(1));
writeFileSync(join(dir, "_helper.js"), `export const tag = "one";\n`);
writeFileSync(join(dir, "tags.js"), `import { tag } from "./_helper.js";\nexport default { collection: "tags", beforeCreate(e) { e.data.tag = tag; } };\n`);

let t: TestApp;
beforeAll(async () => {
  (globalThis as { __baasReloadLog?: string[] }).__baasReloadLog = log;
  t = createTestApp({ env: { HOOKS_DIR: dir }, context: { hooks: await loadHooks(dir) } });
  await createCollection(t, "posts", { create: "public", read: "public" });
  await createCollection(t, "tags", { create: "public", read: "public" });
}, 30_000);
afterAll(() => {
  t.close();
  rmSync(dir, { recursive: true, force: true });
});

const version = async () => (await t.req("POST", "/api/v1/posts", { body: {} })).body.version;

const tagsFile = `import { tag } from "./_helper.js";\nexport default { collection: "tags", beforeCreate(e) { e.data.tag = tag; } };\n`;

/** The hook files as a test starts from (posts.js at version `v`, tags.js with its helper), loaded; the log empty. */
async function reset(v: number): Promise<void> {
  writeFileSync(join(dir, "posts.js"), postsFile(v));
  writeFileSync(join(dir, "_helper.js"), `export const tag = "one";\n`);
  writeFileSync(join(dir, "tags.js"), tagsFile);
  rmSync(join(dir, "more.js"), { force: true });
  await reloadHooks(t.ctx);
  log.length = 0;
}

describe("POST /admin/hooks/reload and GET /admin/hooks", () => {
  test("GET lists each file with its collection, handlers and no error", async () => {
    await reset(1);
    const res = await t.admin("GET", "/api/v1/admin/hooks");
    expect(res.status).toBe(200);
    expect(res.body.dir).toBe(dir);
    expect(res.body.items.map((i: any) => ({ ...i, loaded_at: null }))).toEqual([
      { file: "posts.js", hooks: [{ collection: "posts", handlers: ["beforeCreate", "onCommit"] }], error: null, loaded_at: null },
      { file: "tags.js", hooks: [{ collection: "tags", handlers: ["beforeCreate"] }], error: null, loaded_at: null },
    ]);
  });

  test("only admins: a user gets 403, nobody 401", async () => {
    const user = await registerUser(t, "reader@example.com");
    for (const [method, path] of [["GET", "/api/v1/admin/hooks"], ["POST", "/api/v1/admin/hooks/reload"]] as const) {
      expect((await t.req(method, path)).status).toBe(401);
      expect((await t.req(method, path, { token: user.token })).status).toBe(403);
    }
  });

  test("a changed file is used after a reload; its onCommit handler is the new one, once", async () => {
    await reset(1);
    expect(await version()).toBe(1);
    writeFileSync(join(dir, "posts.js"), postsFile(2));
    const res = await t.admin("POST", "/api/v1/admin/hooks/reload");
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: any) => [i.file, i.error])).toEqual([["posts.js", null], ["tags.js", null]]);
    log.length = 0;
    expect(await version()).toBe(2);
    await waitFor(() => log.length >= 1, { what: "the onCommit handler" });
    await Bun.sleep(20);
    expect(log).toEqual(["v2:create"]);
  });

  test("a helper a hook file imports is loaded again too", async () => {
    await reset(1);
    writeFileSync(join(dir, "_helper.js"), `export const tag = "two";\n`);
    await t.admin("POST", "/api/v1/admin/hooks/reload");
    expect((await t.req("POST", "/api/v1/tags", { body: {} })).body.tag).toBe("two");
  });

  test("a broken file keeps its previous version and says why; the others load; fixed, it is used again", async () => {
    await reset(2);
    writeFileSync(join(dir, "posts.js"), "export default { collection: ");
    writeFileSync(join(dir, "tags.js"), `export default { collection: "tags", beforeCreate(e) { e.data.tag = "three"; } };\n`);
    const res = await t.admin("POST", "/api/v1/admin/hooks/reload");
    expect(res.status).toBe(200);
    const posts = res.body.items.find((i: any) => i.file === "posts.js");
    expect(posts.error).toContain("posts.js");
    expect(posts.hooks).toEqual([{ collection: "posts", handlers: ["beforeCreate", "onCommit"] }]);
    expect(res.body.items.find((i: any) => i.file === "tags.js").error).toBeNull();
    expect(t.log.lines.some((l) => l.msg === "hook file failed to load; its previous version stays in use")).toBe(true);
    log.length = 0;
    expect(await version()).toBe(2);
    expect((await t.req("POST", "/api/v1/tags", { body: {} })).body.tag).toBe("three");
    await waitFor(() => log.length >= 1, { what: "the onCommit handler" });
    expect(log).toEqual(["v2:create"]);
    // A hook object that is not one (no collection) fails the same way.
    writeFileSync(join(dir, "posts.js"), "export default { beforeCreate() {} };\n");
    expect((await t.admin("POST", "/api/v1/admin/hooks/reload")).body.items.find((i: any) => i.file === "posts.js").error).toContain("posts.js");
    expect(await version()).toBe(2);
    writeFileSync(join(dir, "posts.js"), postsFile(3));
    expect((await t.admin("GET", "/api/v1/admin/hooks")).body.items.find((i: any) => i.file === "posts.js").error).not.toBeNull();
    expect((await t.admin("POST", "/api/v1/admin/hooks/reload")).body.items.find((i: any) => i.file === "posts.js").error).toBeNull();
    expect(await version()).toBe(3);
  });

  test("a file that throws while it runs keeps its previous version; fixed, it is used again, and again after later changes", async () => {
    await reset(4);
    writeFileSync(join(dir, "posts.js"), `throw new Error("top-level boom");\nexport default { collection: "posts" };\n`);
    let posts = (await t.admin("POST", "/api/v1/admin/hooks/reload")).body.items.find((i: any) => i.file === "posts.js");
    expect(posts.error).toContain("top-level boom");
    expect(posts.error).toContain(join(dir, "posts.js"));
    expect(await version()).toBe(4);
    writeFileSync(join(dir, "posts.js"), postsFile(5));
    posts = (await t.admin("POST", "/api/v1/admin/hooks/reload")).body.items.find((i: any) => i.file === "posts.js");
    expect(posts.error).toBeNull();
    expect(await version()).toBe(5);
    writeFileSync(join(dir, "posts.js"), postsFile(6));
    await reloadHooks(t.ctx);
    expect(await version()).toBe(6);
    // The copies it was imported through are gone.
    expect(readdirSync(dir).filter((f) => f.includes("reload"))).toEqual([]);
  });

  test("a file removed takes its hooks with it; a new file is loaded", async () => {
    await reset(3);
    unlinkSync(join(dir, "tags.js"));
    writeFileSync(join(dir, "more.js"), `export default { collection: "tags", beforeCreate(e) { e.data.more = true; } };\n`);
    const res = await t.admin("POST", "/api/v1/admin/hooks/reload");
    expect(res.body.items.map((i: any) => i.file)).toEqual(["more.js", "posts.js"]);
    expect((await t.req("POST", "/api/v1/tags", { body: {} })).body).toMatchObject({ more: true });
    // No tag: null, or absent while no record ever set one (a field appears with its first value).
    expect((await t.req("POST", "/api/v1/tags", { body: {} })).body.tag ?? null).toBeNull();
  });

  test("reloads asked for side by side run one after the other and agree", async () => {
    await reset(3);
    unlinkSync(join(dir, "tags.js"));
    writeFileSync(join(dir, "more.js"), `export default { collection: "tags", beforeCreate(e) { e.data.more = true; } };\n`);
    const all = await Promise.all(Array.from({ length: 5 }, () => t.admin("POST", "/api/v1/admin/hooks/reload")));
    for (const r of all) expect(r.body.items.map((i: any) => [i.file, i.error])).toEqual([["more.js", null], ["posts.js", null]]);
    expect(await version()).toBe(3);
  });
});

describe("watching HOOKS_DIR", () => {
  test("a file changed on disk is picked up; a broken save keeps the version before", async () => {
    await reset(3);
    const stop = watchHooks(t.ctx, { debounceMs: 20 });
    try {
      const loads = () => t.log.lines.filter((l) => l.msg === "hooks reloaded").length;
      writeFileSync(join(dir, "posts.js"), postsFile(4));
      await waitFor(async () => (await version()) === 4, { what: "version 4 after the change on disk" });
      const before = loads();
      writeFileSync(join(dir, "posts.js"), "export default {{");
      await waitFor(() => loads() > before, { what: "the reload of the broken file" });
      expect(await version()).toBe(4);
      expect(t.log.lines.some((l) => l.msg.startsWith("hook file failed to load") && String(l.fields?.file).endsWith("posts.js"))).toBe(true);
      writeFileSync(join(dir, "posts.js"), postsFile(5));
      await waitFor(async () => (await version()) === 5, { what: "version 5 after the fix on disk" });
    } finally {
      stop();
    }
    // After the watch stops, changes wait for an explicit reload.
    writeFileSync(join(dir, "posts.js"), postsFile(6));
    await Bun.sleep(100);
    expect(await version()).toBe(5);
    await reloadHooks(t.ctx);
    expect(await version()).toBe(6);
  });

  test("a HOOKS_DIR that does not exist at start (a fresh data directory) is watched once it appears", async () => {
    const later = join(dir, "..", `${dir.split("/").pop()}-later`);
    const fresh = createTestApp({ env: { HOOKS_DIR: later } });
    const stop = watchHooks(fresh.ctx, { debounceMs: 20, pollMs: 20 });
    try {
      await createCollection(fresh, "notes", { create: "public", read: "public" });
      expect((await fresh.req("POST", "/api/v1/notes", { body: {} })).body.stamped).toBeUndefined();
      mkdirSync(later);
      writeFileSync(join(later, "notes.js"), `export default { collection: "notes", beforeCreate(e) { e.data.stamped = true; } };\n`);
      await waitFor(async () => (await fresh.req("POST", "/api/v1/notes", { body: {} })).body.stamped === true, { what: "the hook of the directory made after start" });
    } finally {
      stop();
      await fresh.close();
      rmSync(later, { recursive: true, force: true });
    }
  });
});
