import { describe, expect, test } from "bun:test";
import { ADMIN_SECRET, appPerTest, createCollection, registerUser } from "../helpers/app.ts";

// Totals kept in memory (`total` of a list, `/count`) after commits that change no record and so
// publish no change event: collections, rules, indexes, relations. A count is kept under its
// statement, so the one kind of such commit that changes what the same statement counts is a
// collection dropped and made again under its name (or one a filter looks at): its old total must go.

const t = appPerTest();

const OPEN = { read: "public", create: "public", update: "public", delete: "public" };

/** The `total` of each path, as the admin reads it or as `token`'s user does. */
async function totals(paths: string[], token = ADMIN_SECRET) {
  const out: Record<string, unknown> = {};
  for (const path of paths) {
    const res = await t.req("GET", `/api/v1${path}`, { token });
    expect(res.status).toBe(200);
    out[path] = res.body.total;
  }
  return out;
}

async function write(method: string, path: string, body?: unknown, token?: string) {
  const res = token ? await t.req(method, `/api/v1${path}`, { token, body }) : await t.admin(method, `/api/v1${path}`, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

describe("a collection dropped and made again under the same name", () => {
  test("its list totals and counts start again from what the new table holds", async () => {
    const make = () => createCollection(t, "notes", { ...OPEN, read: "owner", create: "authenticated" });
    await make();
    const ann = await registerUser(t, "ann@example.com");
    for (let i = 0; i < 3; i++) await write("POST", "/notes", { n: i }, ann.token);
    await write("DELETE", `/notes/${(await write("POST", "/notes", { n: 9 }))._id}`);
    const paths = ["/notes", "/notes/count", "/notes?filter=_owner_id:ne:null&limit=1", "/notes/count?filter=_created_at:gt:0", "/notes?include_deleted=true"];
    const counted = (all: number, deleted: number) => Object.fromEntries(paths.map((p) => [p, p.includes("deleted") ? all + deleted : all]));
    // Counted twice: the second answer comes from memory.
    expect(await totals(paths)).toEqual(counted(3, 1));
    expect(await totals(paths)).toEqual(counted(3, 1));
    expect(await totals(["/notes", "/notes/count"], ann.token)).toEqual({ "/notes": 3, "/notes/count": 3 });
    expect(await totals(["/notes", "/notes/count"], ann.token)).toEqual({ "/notes": 3, "/notes/count": 3 });

    await write("DELETE", "/admin/collections/notes");
    await make();
    // No record was written since (no change event): the totals follow the schema change alone.
    expect(await totals(paths)).toEqual(counted(0, 0));
    expect(await totals(["/notes", "/notes/count"], ann.token)).toEqual({ "/notes": 0, "/notes/count": 0 });
  });

  test("a filter on a many field forgets the records of the collection it looked at", async () => {
    await createCollection(t, "authors", OPEN);
    const relate = async () => {
      await createCollection(t, "posts", OPEN);
      await write("POST", "/admin/relations", { from_col: "posts", from_field: "author", to_col: "authors", type: "one", on_delete: "cascade" });
      await write("POST", "/admin/relations", { from_col: "authors", from_field: "posts", to_col: "posts", type: "many" });
    };
    await relate();
    const ann = (await write("POST", "/authors", { name: "Ann" }))._id;
    await write("POST", "/authors", { name: "Bob" });
    await write("POST", "/posts", { author: ann });
    const paths = ["/authors?filter=posts:ne:null", "/authors/count?filter=posts:ne:null", "/authors/count?filter=posts:eq:null"];
    const before = { "/authors?filter=posts:ne:null": 1, "/authors/count?filter=posts:ne:null": 1, "/authors/count?filter=posts:eq:null": 1 };
    expect(await totals(paths)).toEqual(before);
    expect(await totals(paths)).toEqual(before);

    await write("DELETE", "/admin/collections/posts");
    await relate();
    expect(await totals(paths)).toEqual({ "/authors?filter=posts:ne:null": 0, "/authors/count?filter=posts:ne:null": 0, "/authors/count?filter=posts:eq:null": 2 });
  });
});

describe("commits that change no record leave every total right", () => {
  test("a read rule turned owner and back, an index, full text and a relation added: each scope keeps its own total", async () => {
    await createCollection(t, "notes", { ...OPEN, create: "authenticated" });
    const ann = await registerUser(t, "ann@example.com");
    const bob = await registerUser(t, "bob@example.com");
    for (let i = 0; i < 3; i++) await write("POST", "/notes", { cat: "even", n: i }, ann.token);
    await write("POST", "/notes", { cat: "even", n: 9 }, bob.token);
    const of = async () => ({ admin: (await totals(["/notes/count"]))["/notes/count"], ann: (await totals(["/notes"], ann.token))["/notes"], bob: (await totals(["/notes/count"], bob.token))["/notes/count"] });
    const all = { admin: 4, ann: 4, bob: 4 };
    expect(await of()).toEqual(all);
    expect(await of()).toEqual(all);

    await write("PUT", "/admin/collections/notes/rules", { rules: { read: "owner" } });
    const own = { admin: 4, ann: 3, bob: 1 };
    expect(await of()).toEqual(own);
    expect(await of()).toEqual(own);
    await write("PUT", "/admin/collections/notes/rules", { rules: { read: "public" } });
    expect(await of()).toEqual(all);

    await write("POST", "/admin/collections/notes/indexes", { fields: ["cat"] });
    await write("POST", "/admin/collections/notes/fts");
    await createCollection(t, "people", OPEN);
    await write("POST", "/admin/relations", { from_col: "notes", from_field: "person", to_col: "people", type: "one", on_delete: "set_null" });
    expect(await of()).toEqual(all);
    await write("PUT", "/admin/collections/notes/rules", { rules: { read: "owner" } });
    expect(await of()).toEqual(own);
  });
});
