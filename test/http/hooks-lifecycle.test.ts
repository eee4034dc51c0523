import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HookLoadError, loadHooks } from "../../src/hooks/load.ts";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { waitFor } from "../helpers/wait.ts";

// Hook files as a user writes them, loaded from disk like `baas serve` does: restore handlers and
// onCommit (sync, async, throwing, rejecting) next to the in-transaction handlers.
const hooksDir = mkdtempSync(join(tmpdir(), "baas-lifecycle-"));
writeFileSync(
  join(hooksDir, "notes.ts"),
  `const log = () => (globalThis as any).__lifecycleLog as string[];
export default {
  collection: "notes",
  beforeCreate(e: any) {
    if (e.data.title === "refuse") throw new Error("refused by beforeCreate");
  },
  beforeRestore(e: any) {
    log().push("beforeRestore:" + e.op + ":" + e.record._id + ":" + (e.record._deleted_at !== null));
    if (e.record.title === "stay deleted") throw { status: 409, message: "this note stays deleted" };
  },
  afterRestore(e: any) {
    log().push("afterRestore:" + e.op + ":" + e.record._id + ":" + (e.record._deleted_at === null));
  },
  async onCommit(event: any) {
    await Promise.resolve();
    log().push("onCommit:" + event.action + ":" + event.collection + ":" + event.record._id + ":" + event.by);
  },
};
`,
);
writeFileSync(
  join(hooksDir, "zz-failing.js"),
  `export default [
  { collection: "notes", onCommit(event) { if (event.record.title === "boom") throw new Error("sync onCommit failure"); } },
  { collection: "*", async onCommit(event) { if (event.record.title === "reject") throw new Error("async onCommit failure"); } },
];
`,
);

const log: string[] = [];
(globalThis as { __lifecycleLog?: string[] }).__lifecycleLog = log;
const hooks = await loadHooks(hooksDir);
afterAll(() => rmSync(hooksDir, { recursive: true, force: true }));

// A fresh app per test with the "notes" collection; the shared log starts empty.
const t = appPerTest(
  async (app) => {
    log.length = 0;
    await createCollection(app, "notes");
  },
  { context: { hooks } },
);

/** Waits (with a deadline) until `check` holds: async onCommit handlers finish after the response. */
const until = (check: () => boolean, what: string) => waitFor(check, { intervalMs: 5, what });

const errors = () => t.log.lines.filter((l) => l.level === "error" && l.msg === "onCommit hook failed");

describe("onCommit", () => {
  test("an async onCommit runs once per changed record after the commit, with the change event", async () => {
    const res = await t.admin("POST", "/api/v1/notes/bulk", [{ title: "a" }, { title: "b" }]);
    expect(res.status).toBe(201);
    const ids = (res.body.records ?? res.body).map((r: { _id: string }) => r._id);
    await until(() => log.length === 2, "two onCommit calls");
    expect(log).toEqual(ids.map((id: string) => `onCommit:create:notes:${id}:admin`));
  });

  test("an operation that rolls back never runs onCommit", async () => {
    const res = await t.admin("POST", "/api/v1/notes/bulk", [{ title: "a" }, { title: "refuse" }]);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "refused by beforeCreate", code: "hook_rejected", index: 1 });
    // A later committed change proves the listener is live; only its event arrives.
    const ok = await t.admin("POST", "/api/v1/notes", { title: "later" });
    await until(() => log.length === 1, "the later change's onCommit");
    expect(log).toEqual([`onCommit:create:notes:${ok.body._id}:admin`]);
  });

  test("an onCommit that throws is logged and the client still gets its 201", async () => {
    const res = await t.admin("POST", "/api/v1/notes", { title: "boom" });
    expect(res.status).toBe(201);
    expect(res.body.title).toBe("boom");
    await until(() => errors().length === 1, "the logged failure");
    expect(errors()[0].fields).toMatchObject({ collection: "notes", action: "create", id: res.body._id, error: "sync onCommit failure" });
    expect((await t.admin("GET", `/api/v1/notes/${res.body._id}`)).status).toBe(200);
    await until(() => log.length === 1, "the other onCommit handler");
  });

  test("an onCommit whose promise rejects is logged and the client still gets its 200", async () => {
    const created = (await t.admin("POST", "/api/v1/notes", { title: "x" })).body;
    const res = await t.admin("PATCH", `/api/v1/notes/${created._id}`, { title: "reject" });
    expect(res.status).toBe(200);
    await until(() => errors().length === 1, "the logged rejection");
    expect(errors()[0].fields).toMatchObject({ collection: "notes", action: "update", id: created._id, error: "async onCommit failure" });
  });
});

describe("restore hooks", () => {
  test("restore runs beforeRestore on the deleted record, afterRestore on the restored one, then onCommit", async () => {
    const created = (await t.admin("POST", "/api/v1/notes", { title: "n" })).body;
    expect((await t.admin("DELETE", `/api/v1/notes/${created._id}`)).status).toBe(200);
    await until(() => log.length === 2, "create and delete onCommit");
    log.length = 0;
    const res = await t.admin("POST", `/api/v1/notes/${created._id}/restore`);
    expect(res.status).toBe(200);
    await until(() => log.length === 3, "restore hooks and onCommit");
    expect(log).toEqual([
      `beforeRestore:restore:${created._id}:true`,
      `afterRestore:restore:${created._id}:true`,
      `onCommit:restore:notes:${created._id}:admin`,
    ]);
  });

  test("a beforeRestore that throws answers its status, keeps the record deleted and runs no onCommit", async () => {
    const created = (await t.admin("POST", "/api/v1/notes", { title: "stay deleted" })).body;
    await t.admin("DELETE", `/api/v1/notes/${created._id}`);
    await until(() => log.length === 2, "create and delete onCommit");
    log.length = 0;
    const res = await t.admin("POST", `/api/v1/notes/${created._id}/restore`);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "this note stays deleted", code: "hook_rejected" });
    expect((await t.admin("GET", `/api/v1/notes/${created._id}`)).status).toBe(404);
    expect(log).toEqual([`beforeRestore:restore:${created._id}:true`]);
  });
});

describe("hook file checks", () => {
  test("onCommit must be a function", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baas-lifecycle-bad-"));
    try {
      writeFileSync(join(dir, "bad.js"), `export default { collection: "notes", onCommit: 5 };\n`);
      const err = await loadHooks(dir).catch((e) => e);
      expect(err).toBeInstanceOf(HookLoadError);
      expect(err.message).toContain(`"onCommit" must be a function`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
