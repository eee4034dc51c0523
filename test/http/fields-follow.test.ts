import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { requireCollection, saveCollectionRow } from "../../src/catalog/catalog.ts";
import { generateTypes } from "../../src/collections/typegen.ts";
import { inTransaction } from "../../src/transaction.ts";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { createLiveApp, type LiveApp } from "../helpers/sse.ts";

// What follows a declared field or its change at once: realtime filter topics (set on a field with no record
// yet, and kept across a rename or a change of type), the typed client's interfaces and the OpenAPI document;
// and the catalog refuses to write back a copy of a collection read before its fields changed.

setDefaultTimeout(60_000);

let t: LiveApp;
beforeEach(async () => {
  t = createLiveApp();
  await t.ready;
});
afterEach(() => t.stop());

async function ok(method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const res = await t.admin(method, `/api/v1${path}`, body);
  if (res.status !== status) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

describe("declared fields at once", () => {
  test("a filter topic on a declared field (no record yet) follows its rename and its change of type", async () => {
    await ok("POST", "/admin/collections", { name: "tasks", fields: [{ name: "state", type: "text" }, { name: "prio", type: "text" }] }, 201);
    const s = await t.stream({ token: ADMIN_SECRET });
    const topics = [{ collection: "tasks", filter: "state:eq:open" }, { collection: "tasks", filter: "prio:gt:5" }];
    expect((await t.subscribe(await s.clientId(), topics, ADMIN_SECRET)).status).toBe(200);

    await ok("POST", "/tasks", { state: "open", prio: "1" }, 201);
    await ok("PATCH", "/admin/collections/tasks/fields/state", { name: "status" });
    await ok("PATCH", "/admin/collections/tasks/fields/prio", { type: "number" });
    await ok("POST", "/tasks", { status: "closed", prio: 9 }, 201);
    await ok("POST", "/tasks", { status: "open", prio: 2 }, 201);

    const events = await s.waitChanges(3);
    expect(events.map((e) => [e.data.record.state ?? e.data.record.status, e.data.record.prio])).toEqual([
      ["open", "1"],
      ["closed", 9],
      ["open", 2],
    ]);
    // A dropped field matches nothing any more.
    await ok("DELETE", "/admin/collections/tasks/fields/status");
    await ok("POST", "/tasks", { prio: 1 }, 201);
    await ok("POST", "/tasks", { prio: 10 }, 201);
    const after = await s.waitChanges(4);
    expect(after.at(-1)!.data.record.prio).toBe(10);
    expect(s.changes()).toHaveLength(4);
  });

  test("the typed client's interfaces and the collection's OpenAPI document name a field as soon as it is declared, under its new name and type after a change", async () => {
    await ok("POST", "/admin/collections", { name: "notes" }, 201);
    await ok("POST", "/admin/collections/notes/fields", { name: "body", type: "text" }, 201);
    await ok("POST", "/admin/collections/notes/fields", { name: "pinned", type: "boolean" }, 201);
    const types = (await generateTypes(t.ctx, { collection: "notes" })).types;
    expect(types).toContain("body: string | null;");
    expect(types).toContain("pinned: boolean | null;");
    const doc = await ok("GET", "/openapi.json?collection=notes");
    const props = (doc: any) => Object.keys(Object.values(doc.components.schemas as Record<string, any>).find((s: any) => s.description === "A record of notes.").properties);
    expect(props(doc)).toEqual(expect.arrayContaining(["body", "pinned"]));

    await ok("PATCH", "/admin/collections/notes/fields/pinned", { name: "starred", type: "text" });
    const after = (await generateTypes(t.ctx, { collection: "notes" })).types;
    expect(after).toContain("starred: string | null;");
    expect(after).not.toContain("pinned");
    const doc2 = await ok("GET", "/openapi.json?collection=notes");
    expect(props(doc2)).toContain("starred");
    expect(props(doc2)).not.toContain("pinned");
  });
});

describe("the catalog's row", () => {
  test("a copy of a collection read before one of its fields was renamed is refused (409), not written back over the change", async () => {
    await ok("POST", "/admin/collections", { name: "docs", fields: [{ name: "title", type: "text" }] }, 201);
    const stale = await requireCollection(t.ctx, "docs");
    await ok("PATCH", "/admin/collections/docs/fields/title", { name: "heading" });
    const err = await inTransaction(t.ctx, () => saveCollectionRow(t.ctx, { ...stale, rules: { ...stale.rules, read: "disabled" } })).catch((e) => e);
    expect({ status: err.status, code: err.code }).toEqual({ status: 409, code: "conflict" });
    expect((await ok("GET", "/admin/collections/docs")).fields).toEqual([{ name: "heading", type: "text" }]);
    // A copy from before a field was added keeps the added field (the column exists).
    const before = await requireCollection(t.ctx, "docs");
    await ok("POST", "/docs", { extra: 1 }, 201);
    await inTransaction(t.ctx, () => saveCollectionRow(t.ctx, { ...before, rules: { ...before.rules, read: "disabled" } }));
    expect((await ok("GET", "/admin/collections/docs")).fields).toEqual([{ name: "heading", type: "text" }, { name: "extra", type: "number" }]);
  });
});
