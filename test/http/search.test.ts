import { beforeEach, describe, expect, test } from "bun:test";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

const enc = encodeURIComponent;
const DOCS = [
  { title: "Running shoes", body: "The runner ran quickly through the park", n: 1 },
  { title: "Quick brown fox", body: "A fox jumps over the lazy dog", n: 2 },
  { title: "Database tuning", body: "Indexes make queries run fast", n: 3 },
  { title: "Dog training", body: "Teaching an old dog new tricks", n: 4 },
  { title: "Cooking", body: "Slow cooked stew with brown bread", n: 5 },
];
const ids: Record<string, string> = {};

async function search(q: string, extra = ""): Promise<string[]> {
  const res = await t.req("GET", `/api/v1/articles?search=${enc(q)}${extra}`);
  if (res.status !== 200) throw new Error(`${q}: ${res.status} ${res.text}`);
  return res.body.items.map((r: { title: string }) => r.title);
}

// Every test gets its own app with "articles" holding the first three documents, not yet indexed.
const t = appPerTest(async (t) => {
  await createCollection(t, "articles", { read: "public", delete: "public" });
  for (const d of DOCS.slice(0, 3)) ids[d.title] = (await t.admin("POST", "/api/v1/articles", d)).body._id;
});

/** Enables the index, then adds the other two documents. */
async function indexAll() {
  expect((await t.admin("POST", "/api/v1/admin/collections/articles/fts")).status).toBe(201);
  for (const d of DOCS.slice(3)) ids[d.title] = (await t.admin("POST", "/api/v1/articles", d)).body._id;
}

describe("full-text index admin API", () => {
  test("before enabling, status is disabled and search is 400", async () => {
    expect((await t.admin("GET", "/api/v1/admin/collections/articles/fts")).body).toEqual({
      enabled: false,
      fields: [],
      indexed_records: 0,
      state: "disabled",
    });
    const res = await t.req("GET", "/api/v1/articles?search=fox");
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("bad_request");
  });

  test("POST creates the index over existing records with 201, then 200 when already enabled", async () => {
    const first = await t.admin("POST", "/api/v1/admin/collections/articles/fts");
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ enabled: true, fields: ["title", "body"], indexed_records: 3, state: "ready" });
    const again = await t.admin("POST", "/api/v1/admin/collections/articles/fts");
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const col = await t.admin("GET", "/api/v1/admin/collections/articles");
    expect(col.body.fts).toEqual({ enabled: true, fields: ["title", "body"] });
    for (const d of DOCS.slice(3)) ids[d.title] = (await t.admin("POST", "/api/v1/articles", d)).body._id;
    expect((await t.admin("GET", "/api/v1/admin/collections/articles/fts")).body.indexed_records).toBe(5);
  });

  test("the fts endpoints need admin credentials and a known collection", async () => {
    expect((await t.req("GET", "/api/v1/admin/collections/articles/fts")).status).toBe(401);
    expect((await t.req("POST", "/api/v1/admin/collections/articles/fts")).status).toBe(401);
    expect((await t.admin("GET", "/api/v1/admin/collections/nothing/fts")).status).toBe(404);
    expect((await t.admin("POST", "/api/v1/admin/collections/nothing/fts")).status).toBe(404);
  });
});

describe("search queries", () => {
  beforeEach(indexAll);

  test("stemming matches other forms of a word", async () => {
    expect(await search("run")).toEqual(expect.arrayContaining(["Running shoes", "Database tuning"]));
    expect((await search("run")).sort()).toEqual(["Database tuning", "Running shoes"]);
    expect(await search("dogs")).toEqual(expect.arrayContaining(["Quick brown fox", "Dog training"]));
    expect(await search("cook")).toEqual(["Cooking"]);
  });

  test("a trailing * is a prefix query", async () => {
    expect((await search("tun*")).sort()).toEqual(["Database tuning"]);
    expect((await search("qu*")).sort()).toEqual(["Database tuning", "Quick brown fox", "Running shoes"]);
  });

  test("quoted phrases match words in that order only", async () => {
    expect(await search('"brown fox"')).toEqual(["Quick brown fox"]);
    expect(await search('"fox brown"')).toEqual([]);
    expect(await search('"old dog"')).toEqual(["Dog training"]);
  });

  test("AND, OR and NOT combine terms", async () => {
    expect(await search("brown AND dog")).toEqual(["Quick brown fox"]);
    expect((await search("fox OR stew")).sort()).toEqual(["Cooking", "Quick brown fox"]);
    expect(await search("brown NOT fox")).toEqual(["Cooking"]);
    expect(await search("(fox OR stew) AND bread")).toEqual(["Cooking"]);
    expect(await search("brown dog")).toEqual(["Quick brown fox"]);
  });

  test("punctuation inside a word is searched as text, not read as syntax", async () => {
    expect(await search("brown-fox")).toEqual(["Quick brown fox"]);
    expect(await search("title:fox")).toEqual([]);
  });

  test("without a sort the best match comes first; with a sort, the sort wins", async () => {
    await t.admin("POST", "/api/v1/articles", { title: "Fox fox fox", body: "fox", n: 6 });
    expect(await search("fox")).toEqual(["Fox fox fox", "Quick brown fox"]);
    expect(await search("fox", "&sort=n")).toEqual(["Quick brown fox", "Fox fox fox"]);
  });

  test("a term named as often in two texts ranks the shorter text first, whichever was written first", async () => {
    await t.admin("POST", "/api/v1/articles", { title: "Long", body: "the heron waded slowly along the muddy bank of the wide river at dawn", n: 7 });
    await t.admin("POST", "/api/v1/articles", { title: "Short", body: "heron at dawn", n: 8 });
    expect(await search("heron")).toEqual(["Short", "Long"]);
    expect(await search("heron OR dawn")).toEqual(["Short", "Long"]);
  });

  test("search combines with filter, count, aggregate and cursor pages", async () => {
    await t.admin("POST", "/api/v1/articles", { title: "Fox fox fox", body: "fox", n: 6 });
    expect(await search("dog", "&filter=n:gt:2")).toEqual(["Dog training"]);
    expect((await t.req("GET", `/api/v1/articles/count?search=dog`)).body).toEqual({ total: 2 });
    expect((await t.req("GET", `/api/v1/articles/aggregate?fn=sum&field=n&search=dog`)).body).toEqual({ value: 6 });
    const all = await search("fox OR dog OR brown");
    expect(all).toHaveLength(4);
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const res: { body: { items: { title: string }[]; next_cursor: string | null; total: null } } = await t.req(
        "GET",
        `/api/v1/articles?search=${enc("fox OR dog OR brown")}&limit=1${after ? `&after=${after}` : ""}`,
      );
      seen.push(...res.body.items.map((r) => r.title));
      after = res.body.next_cursor;
    } while (after && seen.length < 10);
    expect(seen).toEqual(all);
  });

  const bad = ['"unclosed', "AND", "fox AND", "NOT fox", "(fox", "*", "fox OR OR dog"];
  for (const q of bad) {
    test(`the malformed query ${q} is 400 bad_request`, async () => {
      const res = await t.req("GET", `/api/v1/articles?search=${enc(q)}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), code: "bad_request" });
      expect((await t.req("GET", `/api/v1/articles/count?search=${enc(q)}`)).status).toBe(400);
    });
  }
});

describe("the index stays current", () => {
  beforeEach(indexAll);

  test("an update re-indexes the record", async () => {
    const id = ids["Cooking"];
    expect((await t.admin("PATCH", `/api/v1/articles/${id}`, { body: "Grilled salmon" })).status).toBe(200);
    expect(await search("stew")).toEqual([]);
    expect(await search("salmon")).toEqual(["Cooking"]);
  });

  test("soft delete hides it unless include_deleted=true, restore brings it back, hard delete removes it for good", async () => {
    const id = ids["Dog training"];
    expect((await t.admin("DELETE", `/api/v1/articles/${id}`)).status).toBe(200);
    expect(await search("tricks")).toEqual([]);
    expect(await search("tricks", "&include_deleted=true")).toEqual(["Dog training"]);
    expect((await t.req("GET", `/api/v1/articles/count?search=tricks&include_deleted=true`)).body).toEqual({ total: 1 });
    expect((await t.req("GET", `/api/v1/articles/count?search=tricks`)).body).toEqual({ total: 0 });
    const indexed = async () => (await t.admin("GET", "/api/v1/admin/collections/articles/fts")).body.indexed_records;
    expect(await indexed()).toBe(4);
    expect((await t.admin("POST", `/api/v1/articles/${id}/restore`)).status).toBe(200);
    expect(await search("tricks")).toEqual(["Dog training"]);
    expect(await indexed()).toBe(5);
    expect((await t.admin("DELETE", `/api/v1/admin/collections/articles/records/${id}`)).status).toBe(200);
    expect(await search("tricks")).toEqual([]);
    expect(await indexed()).toBe(4);
  });

  test("a text field that appears later joins the index", async () => {
    await t.admin("POST", "/api/v1/articles", { title: "Later", summary: "zeppelin voyages", n: 7 });
    expect(await search("zeppelin")).toEqual(["Later"]);
    expect((await t.admin("GET", "/api/v1/admin/collections/articles/fts")).body.fields).toEqual(["title", "body", "summary"]);
    const id = ids["Running shoes"];
    await t.admin("PATCH", `/api/v1/articles/${id}`, { summary: "voyage" });
    expect((await search("voyage")).sort()).toEqual(["Later", "Running shoes"]);
  });

  test("DELETE drops the index: 200 { enabled: false }, then search is 400", async () => {
    const res = await t.admin("DELETE", "/api/v1/admin/collections/articles/fts");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ enabled: false });
    expect((await t.req("GET", "/api/v1/articles?search=fox")).status).toBe(400);
    expect((await t.admin("GET", "/api/v1/admin/collections/articles")).body.fts).toEqual({ enabled: false, fields: [] });
    expect((await t.admin("POST", "/api/v1/articles", { title: "after drop" })).status).toBe(201);
    const again = await t.admin("POST", "/api/v1/admin/collections/articles/fts");
    expect(again.status).toBe(201);
    expect(await search("drop")).toEqual(["after drop"]);
  });

  test("a field named after a column the engines keep (rowid, oid, PostgreSQL's xmin…) is 422 rule name, never a 500", async () => {
    await t.admin("POST", "/api/v1/admin/collections", { name: "odd", rules: { read: "public" } });
    await t.admin("POST", "/api/v1/admin/collections/odd/fts");
    for (const name of ["rowid", "OID", "xmin", "xmax", "cmin", "CMAX", "ctid", "tableoid"]) {
      const res = await t.admin("POST", "/api/v1/odd", { [name]: 1, text: "alpha" });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ field: name, rule: "name", message: expect.any(String) }]);
    }
    expect((await t.admin("POST", "/api/v1/odd", { text: "alpha beta" })).status).toBe(201);
    expect((await t.req("GET", "/api/v1/odd?search=alpha")).body.items.map((r: { text: string }) => r.text)).toEqual(["alpha beta"]);
  });

  test("dropping the collection drops its index, and a new collection of that name starts clean", async () => {
    expect((await t.admin("DELETE", "/api/v1/admin/collections/articles")).status).toBe(200);
    // SQLite: the FTS5 table and its shadow tables; PostgreSQL: the table, which held the column and its index.
    const left = onPostgres
      ? await t.ctx.db.all("SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = CAST(current_schema() AS regnamespace) AND relname LIKE 'articles%'")
      : t.sqlite.query("SELECT name FROM sqlite_master WHERE name LIKE '_fts_articles%'").all();
    expect(left).toEqual([]);
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "articles", rules: { read: "public" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/articles", { title: "fresh" })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/admin/collections/articles/fts")).body).toEqual({
      enabled: true,
      fields: ["title"],
      indexed_records: 1,
      state: "ready",
    });
  });
});

describe("words inside addresses", () => {
  test("an e-mail address, a host name and a URL are found by their words", async () => {
    expect((await t.admin("POST", "/api/v1/admin/collections/articles/fts")).status).toBe(201);
    await t.admin("POST", "/api/v1/articles", { title: "Mail", body: "mail foo@example.com now" });
    await t.admin("POST", "/api/v1/articles", { title: "Link", body: "see www.example.org/path" });
    expect(await search("foo")).toEqual(["Mail"]);
    expect((await search("example")).sort()).toEqual(["Link", "Mail"]);
    expect(await search('"foo@example.com"')).toEqual(["Mail"]);
    expect(await search("path")).toEqual(["Link"]);
    expect(await search("org")).toEqual(["Link"]);
  });
});
