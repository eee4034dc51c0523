import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN } from "../../src/principal.ts";
import { createRecord } from "../../src/records/create.ts";
import { createTestApp, registerUser } from "../helpers/app.ts";

const t = createTestApp();
afterAll(() => t.close());

const enc = encodeURIComponent;

interface Item {
  title: string | null;
  n: number | null;
  flag: boolean | null;
  meta?: unknown;
}

const ITEMS: Item[] = [
  { title: "apple pie", n: 1, flag: true, meta: { a: 1 } },
  { title: "banana split", n: 2, flag: false, meta: [1, 2] },
  { title: "cherry tart", n: 3, flag: true, meta: null },
  { title: "Date loaf", n: null, flag: null, meta: null },
  { title: null, n: 10.5, flag: false, meta: null },
  { title: "100% juice", n: -4, flag: true, meta: null },
];
const ids: string[] = [];

async function titles(query: string): Promise<(string | null)[]> {
  const res = await t.req("GET", `/api/v1/items?${query}`);
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.text}`);
  return res.body.items.map((r: { title: string | null }) => r.title);
}

beforeAll(async () => {
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "items", rules: { read: "public" } })).status).toBe(201);
  for (const item of ITEMS) {
    t.clock.advance(1000);
    const res = await t.admin("POST", "/api/v1/items", item);
    expect(res.status).toBe(201);
    ids.push(res.body._id);
  }
});

describe("filters", () => {
  const cases: [string, (i: Item) => boolean][] = [
    ["title:eq:apple pie", (i) => i.title === "apple pie"],
    ["title:ne:apple pie", (i) => i.title !== "apple pie"],
    ["title:eq:null", (i) => i.title === null],
    ["title:ne:null", (i) => i.title !== null],
    ["title:gt:banana", (i) => i.title !== null && i.title > "banana"],
    ["title:lt:banana", (i) => i.title !== null && i.title < "banana"],
    ["title:gte:banana split", (i) => i.title !== null && i.title >= "banana split"],
    ["title:lte:banana split", (i) => i.title !== null && i.title <= "banana split"],
    ["title:like:an", (i) => i.title !== null && i.title.toLowerCase().includes("an")],
    ["title:like:c%", (i) => i.title !== null && i.title.toLowerCase().startsWith("c")],
    ["title:like:%t", (i) => i.title !== null && i.title.endsWith("t")],
    ["title:like:_pple%", (i) => i.title === "apple pie"],
    ["title:in:apple pie,cherry tart", (i) => i.title === "apple pie" || i.title === "cherry tart"],
    ["title:in:apple pie,null", (i) => i.title === "apple pie" || i.title === null],
    ["n:eq:2", (i) => i.n === 2],
    ["n:eq:10.5", (i) => i.n === 10.5],
    ["n:ne:2", (i) => i.n !== 2],
    ["n:gt:2", (i) => i.n !== null && i.n > 2],
    ["n:lt:2", (i) => i.n !== null && i.n < 2],
    ["n:gte:2", (i) => i.n !== null && i.n >= 2],
    ["n:lte:-4", (i) => i.n !== null && i.n <= -4],
    ["n:in:1,3,10.5", (i) => i.n === 1 || i.n === 3 || i.n === 10.5],
    ["n:eq:null", (i) => i.n === null],
    ["n:ne:null", (i) => i.n !== null],
    ["n:like:0.5", (i) => i.n === 10.5],
    ["flag:eq:true", (i) => i.flag === true],
    ["flag:eq:false", (i) => i.flag === false],
    ["flag:eq:1", (i) => i.flag === true],
    ["flag:eq:TRUE", (i) => i.flag === true],
    ["flag:ne:true", (i) => i.flag !== true],
    ["flag:eq:null", (i) => i.flag === null],
    ["flag:ne:null", (i) => i.flag !== null],
    ["flag:gt:false", (i) => i.flag === true],
    ["flag:lt:true", (i) => i.flag === false],
    ["flag:gte:false", (i) => i.flag !== null],
    ["flag:lte:false", (i) => i.flag === false],
    ["flag:in:false,null", (i) => i.flag !== true],
    ["meta:eq:null", (i) => i.meta === null || i.meta === undefined],
    ["meta:ne:null", (i) => i.meta !== null && i.meta !== undefined],
    ['meta:eq:{"a":1}', (i) => JSON.stringify(i.meta) === '{"a":1}'],
    ["meta:like:2]", (i) => Array.isArray(i.meta)],
    ["meta:eq:[1,2]", (i) => Array.isArray(i.meta)],
  ];
  for (const [filter, pred] of cases) {
    test(`filter=${filter} returns exactly the matching records in _id order`, async () => {
      expect(await titles(`filter=${enc(filter)}`)).toEqual(ITEMS.filter(pred).map((i) => i.title));
    });
  }

  test("the bracket syntax gives the same results as the colon syntax", async () => {
    expect(await titles(`filter[title]=${enc("apple pie")}`)).toEqual(["apple pie"]);
    expect(await titles("filter[n][gte]=2&filter[n][lt]=10")).toEqual(["banana split", "cherry tart"]);
    expect(await titles("filter[title][eq]=null")).toEqual([null]);
    expect(await titles("filter[flag]=true&filter=n:gt:0")).toEqual(["apple pie", "cherry tart"]);
    expect(await titles(`filter[title][in]=${enc("Date loaf,100% juice")}`)).toEqual(["Date loaf", "100% juice"]);
  });

  test("several filters are ANDed and a value may contain colons", async () => {
    expect(await titles("filter=n:gt:0&filter=flag:eq:true")).toEqual(["apple pie", "cherry tart"]);
    expect(await titles(`filter=${enc("title:eq:a:b:c")}`)).toEqual([]);
  });

  test("system fields can be filtered", async () => {
    expect(await titles(`filter=_id:eq:${ids[1]}`)).toEqual(["banana split"]);
    const third = (await t.req("GET", `/api/v1/items/${ids[2]}`)).body._created_at;
    expect(await titles(`filter=_created_at:gte:${third}&filter=_owner_id:eq:null`)).toEqual(ITEMS.slice(2).map((i) => i.title));
  });
});

describe("sort", () => {
  test("a single key sorts ascending or descending, nulls first ascending", async () => {
    expect(await titles("sort=n")).toEqual(["Date loaf", "100% juice", "apple pie", "banana split", "cherry tart", null]);
    expect(await titles("sort=-n")).toEqual([null, "cherry tart", "banana split", "apple pie", "100% juice", "Date loaf"]);
    expect(await titles("sort=n:desc")).toEqual(await titles("sort=-n"));
    expect(await titles("sort=n:asc")).toEqual(await titles("sort=n"));
  });

  test("several keys apply in order, repeated or comma-separated, with _id as the last tie-break", async () => {
    const expected = ["apple pie", "cherry tart", "100% juice", "banana split", null, "Date loaf"];
    expect(await titles("sort=-flag&sort=n")).toEqual(["100% juice", "apple pie", "cherry tart", "banana split", null, "Date loaf"]);
    expect(await titles("sort=-flag,n")).toEqual(["100% juice", "apple pie", "cherry tart", "banana split", null, "Date loaf"]);
    expect(await titles("sort=-flag")).toEqual(expected);
    expect(await titles("sort=-_id")).toEqual([...ITEMS].reverse().map((i) => i.title));
  });
});

describe("pages, cursors and fields", () => {
  test("offset mode gives total and a next cursor while more records follow", async () => {
    const p1 = await t.req("GET", "/api/v1/items?limit=4");
    expect(p1.status).toBe(200);
    expect(p1.body.items).toHaveLength(4);
    expect(p1.body.total).toBe(6);
    expect(p1.body.next_cursor).toBe(ids[3]);
    const p2 = await t.req("GET", "/api/v1/items?limit=4&page=2");
    expect(p2.body.items.map((r: { _id: string }) => r._id)).toEqual(ids.slice(4));
    expect(p2.body.total).toBe(6);
    expect(p2.body.next_cursor).toBeNull();
    const p9 = await t.req("GET", "/api/v1/items?limit=4&page=9&filter=n:gt:0");
    expect(p9.body).toEqual({ items: [], next_cursor: null, total: 4 });
  });

  test("cursor mode has total null and continues after the given record", async () => {
    const res = await t.req("GET", `/api/v1/items?limit=2&after=${ids[1]}`);
    expect(res.body.total).toBeNull();
    expect(res.body.items.map((r: { _id: string }) => r._id)).toEqual([ids[2], ids[3]]);
    expect(res.body.next_cursor).toBe(ids[3]);
    const last = await t.req("GET", `/api/v1/items?limit=2&after=${ids[3]}`);
    expect(last.body.next_cursor).toBeNull();
  });

  test("fields returns the named fields plus _id", async () => {
    const res = await t.req("GET", "/api/v1/items?fields=title,n&limit=1");
    expect(res.body.items).toEqual([{ _id: ids[0], title: "apple pie", n: 1 }]);
    const flags = await t.req("GET", "/api/v1/items?fields=flag,meta&limit=2");
    expect(flags.body.items).toEqual([
      { _id: ids[0], flag: true, meta: { a: 1 } },
      { _id: ids[1], flag: false, meta: [1, 2] },
    ]);
  });

  test("a full record lists every known field, null where never set", async () => {
    const res = await t.req("GET", "/api/v1/items?limit=1&sort=-_id");
    expect(Object.keys(res.body.items[0]).sort()).toEqual(
      ["_created_at", "_deleted_at", "_id", "_owner_id", "_updated_at", "flag", "meta", "n", "title"].sort(),
    );
  });
});

describe("cursor walk", () => {
  beforeAll(async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "walk", rules: { read: "public" } });
    for (let i = 0; i < 300; i++) {
      const data: Record<string, unknown> = { k: i % 7 === 0 ? null : i % 13, s: `v${i % 5}` };
      await createRecord(t.ctx, "walk", data, ADMIN);
    }
    await createRecord(t.ctx, "walk", { k: 1, s: null }, ADMIN);
  });

  async function walk(query: string, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let after: string | null = null;
    for (let guard = 0; guard < 1000; guard++) {
      const res = await t.req("GET", `/api/v1/walk?limit=${limit}&${query}${after ? `&after=${after}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((r: { _id: string }) => r._id));
      after = res.body.next_cursor;
      if (!after) break;
    }
    return seen;
  }

  for (const sort of ["", "sort=k", "sort=-k", "sort=s,-k", "sort=-s,k", "sort=k:desc,s:asc", "sort=-s&sort=k&sort=-_created_at"]) {
    test(`walking with ${sort || "no sort"} returns each record exactly once, in the offset order`, async () => {
      const full = (await t.req("GET", `/api/v1/walk?limit=500&${sort}`)).body.items.map((r: { _id: string }) => r._id);
      expect(full).toHaveLength(301);
      const seen = await walk(sort, 23);
      expect(seen).toEqual(full);
      expect(new Set(seen).size).toBe(301);
    });
  }

  test("a cursor walk combines with a filter", async () => {
    const full = (await t.req("GET", "/api/v1/walk?limit=500&filter=k:gte:5&sort=-k")).body.items.map((r: { _id: string }) => r._id);
    expect(await walk("filter=k:gte:5&sort=-k", 10)).toEqual(full);
  });
});

describe("include_deleted and owner-filtered reads", () => {
  test("soft-deleted records are left out unless include_deleted=true", async () => {
    // include_deleted shows deleted records to callers whose delete rule holds (CONTRACT §12): public here.
    await t.admin("POST", "/api/v1/admin/collections", { name: "trash", rules: { read: "public", delete: "public" } });
    const a = (await t.admin("POST", "/api/v1/trash", { v: 1 })).body;
    await t.admin("POST", "/api/v1/trash", { v: 2 });
    expect((await t.admin("DELETE", `/api/v1/trash/${a._id}`)).status).toBe(200);
    expect((await t.req("GET", "/api/v1/trash")).body.total).toBe(1);
    const all = await t.req("GET", "/api/v1/trash?include_deleted=true");
    expect(all.body.total).toBe(2);
    expect(all.body.items[0]._deleted_at).toEqual(expect.any(Number));
    expect((await t.req("GET", "/api/v1/trash/count")).body).toEqual({ total: 1 });
    expect((await t.req("GET", "/api/v1/trash/count?include_deleted=true")).body).toEqual({ total: 2 });
    expect((await t.req("GET", "/api/v1/trash/aggregate?fn=sum&field=v")).body).toEqual({ value: 2 });
    expect((await t.req("GET", "/api/v1/trash/aggregate?fn=sum&field=v&include_deleted=true")).body).toEqual({ value: 3 });
    // Under a delete rule that does not hold for the caller, deleted records stay hidden, also by id.
    expect((await t.admin("PUT", "/api/v1/admin/collections/trash/rules", { rules: { delete: "authenticated" } })).status).toBe(200);
    expect((await t.req("GET", "/api/v1/trash?include_deleted=true")).body.total).toBe(1);
    expect((await t.req("GET", "/api/v1/trash/count?include_deleted=true")).body).toEqual({ total: 1 });
    expect((await t.req("GET", `/api/v1/trash/${a._id}?include_deleted=true`)).status).toBe(404);
    expect((await t.admin("GET", `/api/v1/trash/${a._id}?include_deleted=true`)).status).toBe(200);
  });

  test("an owner read rule shows each user only their own records in list, count and aggregate", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "owner", create: "authenticated" } });
    const alice = await registerUser(t, "alice-q@example.com");
    const bob = await registerUser(t, "bob-q@example.com");
    for (const [u, v] of [[alice, 1], [alice, 2], [bob, 10]] as const)
      expect((await t.req("POST", "/api/v1/notes", { token: u.token, body: { v, tag: "x" } })).status).toBe(201);
    const list = await t.req("GET", "/api/v1/notes", { token: alice.token });
    expect(list.body.total).toBe(2);
    expect(list.body.items.every((r: { _owner_id: string }) => r._owner_id === alice.id)).toBe(true);
    expect((await t.req("GET", "/api/v1/notes/count", { token: bob.token })).body).toEqual({ total: 1 });
    expect((await t.req("GET", "/api/v1/notes/aggregate?fn=sum&field=v", { token: alice.token })).body).toEqual({ value: 3 });
    expect((await t.req("GET", "/api/v1/notes/aggregate?fn=count&group_by=tag", { token: bob.token })).body).toEqual({
      groups: [{ group: "x", value: 1 }],
    });
    expect((await t.admin("GET", "/api/v1/notes/count")).body).toEqual({ total: 3 });
    for (const path of ["/api/v1/notes", "/api/v1/notes/count", "/api/v1/notes/aggregate?fn=count"]) {
      const res = await t.req("GET", path);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("unauthorized");
    }
  }, 30_000);
});

describe("count and aggregate", () => {
  test("count honours filters", async () => {
    expect((await t.req("GET", "/api/v1/items/count")).body).toEqual({ total: 6 });
    expect((await t.req("GET", "/api/v1/items/count?filter=flag:eq:true")).body).toEqual({ total: 3 });
    expect((await t.req("GET", "/api/v1/items/count?filter[n][gt]=100")).body).toEqual({ total: 0 });
  });

  test("each function computes over the matching records", async () => {
    const agg = async (q: string) => (await t.req("GET", `/api/v1/items/aggregate?${q}`)).body;
    expect(await agg("fn=sum&field=n")).toEqual({ value: 12.5 });
    expect(await agg("fn=avg&field=n&filter=n:gt:0")).toEqual({ value: 16.5 / 4 });
    expect(await agg("fn=min&field=n")).toEqual({ value: -4 });
    expect(await agg("fn=max&field=n")).toEqual({ value: 10.5 });
    expect(await agg("fn=count")).toEqual({ value: 6 });
    expect(await agg("fn=count&field=n")).toEqual({ value: 5 });
    expect(await agg("fn=min&field=title")).toEqual({ value: "100% juice" });
    expect(await agg("fn=max&field=flag")).toEqual({ value: true });
  });

  test("group_by gives one group per value, ordered by group ascending", async () => {
    const res = await t.req("GET", "/api/v1/items/aggregate?fn=sum&field=n&group_by=flag");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      groups: [
        { group: null, value: 0 },
        { group: false, value: 12.5 },
        { group: true, value: 0 },
      ],
    });
    const counts = await t.req("GET", "/api/v1/items/aggregate?fn=count&group_by=flag&filter=n:ne:null");
    expect(counts.body.groups).toEqual([
      { group: false, value: 2 },
      { group: true, value: 3 },
    ]);
  });

  test("aggregates of nothing: sum and count 0, avg min max null, no groups", async () => {
    const agg = async (q: string) => (await t.req("GET", `/api/v1/items/aggregate?filter=n:gt:1000&${q}`)).body;
    expect(await agg("fn=sum&field=n")).toEqual({ value: 0 });
    expect(await agg("fn=count")).toEqual({ value: 0 });
    expect(await agg("fn=avg&field=n")).toEqual({ value: null });
    expect(await agg("fn=min&field=n")).toEqual({ value: null });
    expect(await agg("fn=max&field=title")).toEqual({ value: null });
    expect(await agg("fn=sum&field=n&group_by=title")).toEqual({ groups: [] });
  });
});

describe("bad parameters answer 400 bad_request", () => {
  const bad = [
    "/api/v1/items?limit=0",
    "/api/v1/items?limit=501",
    "/api/v1/items?limit=abc",
    "/api/v1/items?limit=-1",
    "/api/v1/items?page=0",
    "/api/v1/items?page=x",
    "/api/v1/items?after=nosuchid",
    `/api/v1/items?after=${"x".repeat(200)}`,
    "/api/v1/items?filter=nope:eq:1",
    "/api/v1/items?filter=title:regex:a",
    "/api/v1/items?filter=title",
    "/api/v1/items?filter=title:eq",
    "/api/v1/items?filter=n:eq:abc",
    "/api/v1/items?filter=n:gt:null",
    "/api/v1/items?filter=flag:eq:maybe",
    "/api/v1/items?filter[nope]=1",
    "/api/v1/items?filter[n][between]=1",
    "/api/v1/items?filter[]=1",
    "/api/v1/items?filter[n]x=1",
    "/api/v1/items?sort=nope",
    "/api/v1/items?sort=n:up",
    "/api/v1/items?sort=-n:asc",
    "/api/v1/items?sort=-",
    "/api/v1/items?fields=title,nope",
    "/api/v1/items?include_deleted=maybe",
    "/api/v1/items?search=apple",
    "/api/v1/items/count?filter=nope:eq:1",
    "/api/v1/items/count?search=apple",
    "/api/v1/items/aggregate",
    "/api/v1/items/aggregate?fn=median&field=n",
    "/api/v1/items/aggregate?fn=sum",
    "/api/v1/items/aggregate?fn=sum&field=title",
    "/api/v1/items/aggregate?fn=avg&field=flag",
    "/api/v1/items/aggregate?fn=max&field=nope",
    "/api/v1/items/aggregate?fn=count&group_by=nope",
    "/api/v1/items/aggregate?fn=count&filter=n:eq:x",
    // A like pattern past 256 characters (its cost per row grows with its length): list, count, aggregate.
    `/api/v1/items?filter=title:like:${"a".repeat(257)}`,
    `/api/v1/items?filter[title][like]=%25${"a".repeat(255)}%25`,
    `/api/v1/items/count?filter=title:like:${"a".repeat(300)}`,
    `/api/v1/items/aggregate?fn=count&filter=title:like:${"a".repeat(300)}`,
    // A NUL in a like pattern (SQLite would end the pattern there and match every row).
    "/api/v1/items/count?filter=title:like:%00",
    "/api/v1/items?filter[title][like]=a%00b",
  ];
  for (const path of bad) {
    test(`GET ${path.slice(0, 90)} is 400`, async () => {
      const res = await t.req("GET", path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
    });
  }

  test("an unknown collection is 404 on count and aggregate", async () => {
    expect((await t.req("GET", "/api/v1/nothing/count")).status).toBe(404);
    expect((await t.req("GET", "/api/v1/nothing/aggregate?fn=count")).status).toBe(404);
  });
});

test("like reads a backslash as an ordinary character, on both engines", async () => {
  expect((await t.admin("POST", "/api/v1/admin/collections", { name: "slashes", rules: { read: "public" } })).status).toBe(201);
  for (const title of ["back\\slash", "plain", "a%b"]) expect((await t.admin("POST", "/api/v1/slashes", { title })).status).toBe(201);
  const like = async (value: string) => {
    const res = await t.req("GET", `/api/v1/slashes?filter=${enc(`title:like:${value}`)}`);
    expect(res.status).toBe(200);
    return res.body.items.map((r: { title: string }) => r.title);
  };
  expect(await like("back\\")).toEqual(["back\\slash"]);
  expect(await like("k\\s")).toEqual(["back\\slash"]);
  expect(await like("\\")).toEqual(["back\\slash"]);
  expect(await like("a%\\")).toEqual([]);
  expect(await like("\\%")).toEqual([]);
  // The longest pattern taken is 256 characters.
  expect(await like(`%${"x".repeat(254)}%`)).toEqual([]);
});
