import { afterEach, beforeEach, expect, test } from "bun:test";
import type { ChangeEvent } from "../../src/events/bus.ts";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { columnNames } from "../helpers/schema.ts";
import { waitFor } from "../helpers/wait.ts";

// Creates sent together share a transaction. One that adds a column for a new field and then breaks a
// field rule fails after it changed the schema: it gets its 422 alone, the column goes with it, and every
// other create is stored and published exactly once, whichever place the failing one has among them.

let t: TestApp;
beforeEach(async () => {
  t = createTestApp();
  await createCollection(t, "notes", { read: "public", create: "public" });
  expect((await t.req("POST", "/api/v1/notes", { body: { title: "first" } })).status).toBe(201);
  expect((await t.admin("PUT", "/api/v1/admin/collections/notes/rules", { field_rules: [{ field: "title", required: true }] })).status).toBe(200);
});
afterEach(() => t.close());

for (const at of [0, 7, 19]) {
  test(`the failing create at place ${at} of 20 sent together`, async () => {
    const events: ChangeEvent[] = [];
    t.ctx.events.subscribe((e) => {
      if (e.collection === "notes") events.push(e);
    });
    const bodies = Array.from({ length: 20 }, (_, i) => (i === at ? { fresh: 1 } : { title: `note ${i}`, n: i }));
    const res = await Promise.all(bodies.map((body) => t.req("POST", "/api/v1/notes", { body })));
    expect(res.map((r) => r.status)).toEqual(bodies.map((_, i) => (i === at ? 422 : 201)));
    expect(res[at]!.body).toEqual({ errors: [{ field: "title", rule: "required", message: '"title" is required.' }] });
    expect(await columnNames(t, "notes")).not.toContain("fresh");
    const fields = (await t.admin("GET", "/api/v1/admin/collections/notes")).body.fields.map((f: { name: string }) => f.name);
    expect(fields).toEqual(["title", "n"]);
    const created = res.filter((r) => r.status === 201).map((r) => r.body._id as string);
    const stored = await t.req("GET", "/api/v1/notes?limit=100&sort=n:asc&filter=n:gte:0");
    expect(stored.body.items.map((r: { _id: string }) => r._id).sort()).toEqual([...created].sort());
    expect(stored.body.items.map((r: { n: number }) => r.n)).toEqual(bodies.flatMap((_, i) => (i === at ? [] : [i])));
    await waitFor(() => events.length >= created.length, { what: "one change event per stored record" });
    expect(events.map((e) => e.record._id).sort()).toEqual([...created].sort());
  });
}
