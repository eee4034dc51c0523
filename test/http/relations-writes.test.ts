import { describe, expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";

let author = "";
let tag = "";

// Every test gets its own app: posts with a one relation to authors and a many_via to tags, one author, one tag.
const t = appPerTest(async (t) => {
  for (const name of ["wauthors", "wposts", "wtags"]) await createCollection(t, name);
  await t.admin("POST", "/api/v1/admin/relations", { from_col: "wposts", from_field: "author", to_col: "wauthors", type: "one" });
  await t.admin("POST", "/api/v1/admin/relations", { from_col: "wposts", from_field: "tags", to_col: "wtags", type: "many_via" });
  author = (await t.admin("POST", "/api/v1/wauthors", { name: "A" })).body._id;
  tag = (await t.admin("POST", "/api/v1/wtags", { label: "t" })).body._id;
});

const count = async () => (await t.admin("GET", "/api/v1/wposts?limit=500")).body.items.length;

describe("relations in bulk and batch writes", () => {
  test("a bulk insert checks every one value and many_via id: 422 relation with the index, nothing saved", async () => {
    const before = await count();
    const res = await t.admin("POST", "/api/v1/wposts/bulk", [{ author }, { author: "ghost" }]);
    expect(res.status).toBe(422);
    expect(res.body.index).toBe(1);
    expect(res.body.errors).toEqual([{ field: "author", rule: "relation", message: `"author" must name an existing record of "wauthors".`, index: 1 }]);
    const bad = await t.admin("POST", "/api/v1/wposts/bulk", [{ tags: [tag] }, { tags: [tag] }, { tags: ["ghost"] }]);
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0]).toMatchObject({ field: "tags", rule: "relation", index: 2 });
    expect(await count()).toBe(before);
  });

  test("a bulk insert stores many_via links for every record", async () => {
    const res = await t.admin("POST", "/api/v1/wposts/bulk", [{ author, tags: [tag] }, { tags: [] }]);
    expect(res.status).toBe(201);
    expect(res.body.map((r: any) => r.tags)).toEqual([[tag], []]);
  });

  test("a batch sees its own earlier operations: a record created first can be named by the next", async () => {
    const res = await t.admin("POST", "/api/v1/wauthors/batch", { operations: [{ op: "create", data: { name: "B" } }] });
    expect(res.status).toBe(200);
    const fresh = res.body.results[0].record._id;
    const ok = await t.admin("POST", "/api/v1/wposts/batch", {
      operations: [
        { op: "create", data: { author: fresh, tags: [tag] } },
        { op: "create", data: { author } },
      ],
    });
    expect(ok.status).toBe(200);
    expect(ok.body.results[0].record.tags).toEqual([tag]);
  });

  test("a batch operation naming no record fails the batch and saves nothing", async () => {
    const before = await count();
    const res = await t.admin("POST", "/api/v1/wposts/batch", {
      operations: [
        { op: "create", data: { author } },
        { op: "create", data: { author: "ghost" } },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "batch_failed", index: 1, op: "create" });
    expect(await count()).toBe(before);
  });

  test("a batch delete blocked by restrict fails the batch", async () => {
    expect((await t.admin("POST", "/api/v1/wposts", { author })).status).toBe(201);
    const res = await t.admin("POST", "/api/v1/wauthors/batch", { operations: [{ op: "delete", id: author }] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "batch_failed", index: 0, op: "delete" });
    expect((await t.admin("GET", `/api/v1/wauthors/${author}`)).status).toBe(200);
  });
});

describe("relation values holding characters the engines store differently", () => {
  test("an id with NUL or U+E000 in it names no record: 422 relation on every write path, on both engines", async () => {
    for (const odd of ["a\u0000b", "\u0000", "x\uE000y"]) {
      const one = await t.admin("POST", "/api/v1/wposts", { author: odd });
      expect({ odd, status: one.status, errors: one.body.errors }).toEqual({ odd, status: 422, errors: [{ field: "author", rule: "relation", message: `"author" must name an existing record of "wauthors".` }] });
      const many = await t.admin("POST", "/api/v1/wposts", { tags: [tag, odd] });
      expect({ odd, status: many.status, rule: many.body.errors?.[0]?.rule }).toEqual({ odd, status: 422, rule: "relation" });
      const bulk = await t.admin("POST", "/api/v1/wposts/bulk", [{ author }, { author: odd }]);
      expect({ odd, status: bulk.status, index: bulk.body.index }).toEqual({ odd, status: 422, index: 1 });
    }
    // The in-list still finds what is there.
    expect((await t.admin("POST", "/api/v1/wposts", { author, tags: [tag] })).status).toBe(201);
  });
});
