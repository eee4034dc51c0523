import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { freshDatabaseUrl, onPostgres } from "../helpers/engine.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { resumeFtsBuilds } from "../../src/search/fts.ts";
import { migratePostgres } from "../../src/db/migrate-postgres.ts";
import { FTS_CONFIG, tsvectorExpr } from "../../src/db/pg-fts.ts";

// Full text on PostgreSQL (a generated `tsvector` column `_fts` with a GIN index) next to SQLite's FTS5:
// the index is complete when enabling answers, the system column never shows, malformed queries get
// the same 400s, and relevance pages by cursor like on SQLite; every word is indexed and accents are ignored
// on both. Where the engines differ by design (deep nesting), each engine's answer is pinned; a text too large
// to index is in value-limits.test.ts.

let t: TestApp;
const enc = encodeURIComponent;

beforeAll(async () => {
  t = createTestApp();
  await t.ready;
});
afterAll(() => t.close());

/** A collection with full text enabled over `records`, written before enabling. */
async function indexed(name: string, records: Record<string, unknown>[]): Promise<{ status: number; body: any }> {
  await createCollection(t, name, { read: "public" });
  for (let i = 0; i < records.length; i += 500) {
    const res = await t.admin("POST", `/api/v1/${name}/bulk`, records.slice(i, i + 500));
    if (res.status !== 201) throw new Error(`seed ${name}: ${res.status} ${res.text}`);
  }
  return await t.admin("POST", `/api/v1/admin/collections/${name}/fts`);
}

async function titles(path: string): Promise<string[]> {
  const res = await t.req("GET", path);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body.items.map((r: { title: string }) => r.title);
}

describe.skipIf(!onPostgres)("PostgreSQL: the index is a generated column", () => {
  test("enabling answers state ready at once with every record indexed, and nothing is left to build", async () => {
    const records = Array.from({ length: 1200 }, (_, i) => ({ title: `note ${i}`, body: i % 2 ? "walrus sings" : "otter swims" }));
    const first = await indexed("walruses", records);
    expect(first.status).toBe(201);
    const ready = { enabled: true, fields: ["title", "body"], indexed_records: 1200, state: "ready" };
    expect(first.body).toEqual(ready);
    expect((await t.admin("GET", "/api/v1/admin/collections/walruses/fts")).body).toEqual(ready);
    expect((await t.admin("GET", "/api/v1/admin/collections/walruses")).body.fts).toEqual({ enabled: true, fields: ["title", "body"] });
    expect((await t.req("GET", `/api/v1/walruses/count?search=walrus`)).body).toEqual({ total: 600 });
    await resumeFtsBuilds(t.ctx);
    expect((await t.admin("GET", "/api/v1/admin/collections/walruses/fts")).body).toEqual(ready);

    const index = await t.ctx.db.all<{ indexname: string; indexdef: string }>("SELECT indexname, indexdef FROM pg_catalog.pg_indexes WHERE schemaname = current_schema() AND tablename = 'walruses' AND indexdef LIKE '%gin%'");
    expect(index).toEqual([{ indexname: "_fts_walruses", indexdef: expect.stringContaining("USING gin (_fts)") }]);
    // Disabling drops the column and its index with it.
    expect((await t.admin("DELETE", "/api/v1/admin/collections/walruses/fts")).status).toBe(200);
    const left = await t.ctx.db.all("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'walruses' AND column_name = '_fts'");
    expect(left).toEqual([]);
    expect(await t.ctx.db.all("SELECT 1 FROM pg_catalog.pg_indexes WHERE schemaname = current_schema() AND tablename = 'walruses' AND indexdef LIKE '%gin%'")).toEqual([]);
  });
});

describe.skipIf(!onPostgres)("PostgreSQL: enabling on a large collection", () => {
  test("is not cut short by the statement timeout, which still bounds other statements", async () => {
    const engine = openPostgres({ url: await freshDatabaseUrl(), poolSize: 2, statementTimeoutMs: 500 });
    const big = createTestApp({ context: { engine } });
    try {
      await big.ready;
      await createCollection(big, "logs", { read: "public" });
      expect((await big.admin("POST", "/api/v1/logs", { line: "first" })).status).toBe(201);
      await engine.transaction(async () => {
        await engine.exec("SET LOCAL statement_timeout = 0");
        await engine.exec(`INSERT INTO "logs" ("_id", "_created_at", "_updated_at", "line") SELECT 'r' || g, 1, 1, 'otter number ' || g || ' swims in the bay' FROM generate_series(1, 200000) AS g`);
      });
      // The timeout holds for a plain statement that runs longer.
      await expect(engine.get("SELECT pg_sleep(1)")).rejects.toMatchObject({ status: 503 });
      const res = await big.admin("POST", "/api/v1/admin/collections/logs/fts");
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ enabled: true, fields: ["line"], indexed_records: 200_001, state: "ready" });
    } finally {
      await big.close();
    }
  }, 120_000);
});

describe("long collection names", () => {
  test("two collections whose long names differ only at the end both get their indexes", async () => {
    // 62 characters: the table names fit PostgreSQL's 63 bytes, `_fts_<name>` and `_idx_<name>_owner` do not.
    const stem = "c".repeat(60);
    for (const name of [`${stem}_a`, `${stem}_b`]) {
      expect((await indexed(name, [{ title: `kept in ${name.slice(-1)}` }])).status).toBe(201);
      expect(await titles(`/api/v1/${name}?search=kept`)).toEqual([`kept in ${name.slice(-1)}`]);
    }
  });
});

describe("the index column is a system column", () => {
  test("_fts never shows in records and cannot be selected, sorted, filtered or set", async () => {
    expect((await indexed("hidden", [{ title: "brown fox" }])).status).toBe(201);
    const written = await t.admin("POST", "/api/v1/hidden", { title: "brown dog" });
    expect(written.status).toBe(201);
    expect(Object.keys(written.body).sort()).toEqual(["_created_at", "_deleted_at", "_id", "_owner_id", "_updated_at", "title"]);
    const listed = await t.req("GET", "/api/v1/hidden?search=brown");
    expect(listed.body.items).toHaveLength(2);
    for (const r of listed.body.items) expect(Object.keys(r)).not.toContain("_fts");
    expect(Object.keys((await t.req("GET", `/api/v1/hidden/${written.body._id}`)).body)).not.toContain("_fts");
    expect((await t.admin("GET", "/api/v1/admin/collections/hidden")).body.fields.map((f: { name: string }) => f.name)).toEqual(["title"]);
    for (const q of ["fields=_fts", "sort=_fts", "filter=_fts:eq:fox", "search=fox&sort=-_fts"]) {
      const res = await t.req("GET", `/api/v1/hidden?${q}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'unknown field "_fts" in collection "hidden"', code: "bad_request" });
    }
    expect((await t.req("GET", "/api/v1/hidden/aggregate?fn=count&field=_fts")).status).toBe(400);
    // Like every `_` member of a body, it is ignored: the index holds the record's text fields only.
    const set = await t.admin("POST", "/api/v1/hidden", { title: "plain words", _fts: "zebra" });
    expect(set.status).toBe(201);
    expect(Object.keys(set.body)).not.toContain("_fts");
    expect(await titles("/api/v1/hidden?search=zebra")).toEqual([]);
    expect(await titles("/api/v1/hidden?search=plain")).toEqual(["plain words"]);
    const patched = await t.admin("PATCH", `/api/v1/hidden/${set.body._id}`, { _fts: "zebra" });
    expect(patched.status).toBe(200);
    expect(await titles("/api/v1/hidden?search=zebra")).toEqual([]);
  });
});

describe.skipIf(!onPostgres)("PostgreSQL: an index made before every word was kept", () => {
  test("the migration makes a column of the english configuration again with the one that keeps every word", async () => {
    expect((await indexed("oldfts", [{ title: "the answer is here" }, { title: "café" }])).status).toBe(201);
    const expr = tsvectorExpr(["title"]).replace(`'${FTS_CONFIG}'`, "'english'");
    await t.ctx.db.exec(`ALTER TABLE "oldfts" DROP COLUMN "_fts"; ALTER TABLE "oldfts" ADD COLUMN "_fts" tsvector GENERATED ALWAYS AS (${expr}) STORED; CREATE INDEX "_fts_oldfts" ON "oldfts" USING gin ("_fts")`);
    expect(await titles("/api/v1/oldfts?search=the")).toEqual([]);
    await t.ctx.db.run("DELETE FROM _migrations WHERE name = ?", ["0014_fts_words"]);
    expect(await migratePostgres(t.ctx.db)).toEqual(["0014_fts_words"]);
    expect(await titles("/api/v1/oldfts?search=the")).toEqual(["the answer is here"]);
    expect(await titles("/api/v1/oldfts?search=cafe")).toEqual(["café"]);
    const index = await t.ctx.db.all("SELECT indexname FROM pg_catalog.pg_indexes WHERE schemaname = current_schema() AND tablename = 'oldfts' AND indexdef LIKE '%gin%'");
    expect(index).toEqual([{ indexname: "_fts_oldfts" }]);
  });
});

describe("search on both engines", () => {
  beforeAll(async () => {
    const docs = [
      { title: "one fox", body: "the fox" },
      { title: "three foxes", body: "fox fox fox" },
      { title: "two foxes", body: "fox fox" },
      { title: "a dog", body: "the dog barks" },
    ];
    // Ties in relevance: the same text several times.
    for (let i = 0; i < 5; i++) docs.push({ title: `tie ${i}`, body: "hedgehog" });
    expect((await indexed("docs", docs)).status).toBe(201);
  });

  const bad: [string, string][] = [
    ['"unclosed', "invalid search query: a quote is not closed"],
    ["*", "invalid search query: * must follow a word"],
    ["AND", 'invalid search query: syntax error near "AND"'],
    ["fox AND", 'invalid search query: syntax error near ""'],
    ["NOT fox", 'invalid search query: syntax error near "NOT"'],
    ["(fox", 'invalid search query: syntax error near ""'],
    ["fox OR OR dog", 'invalid search query: syntax error near "OR"'],
  ];
  for (const [q, message] of bad) {
    test(`${JSON.stringify(q)} is 400 "${message}" on list, count and aggregate`, async () => {
      for (const path of ["/api/v1/docs?", "/api/v1/docs/count?", "/api/v1/docs/aggregate?fn=count&"]) {
        const res = await t.req("GET", `${path}search=${enc(q)}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: message, code: "bad_request" });
      }
    });
  }

  test("best match first; equal relevance falls back to _id; cursor pages follow the same order", async () => {
    expect((await titles(`/api/v1/docs?search=fox`)).slice(0, 1)).toEqual(["three foxes"]);
    expect((await titles(`/api/v1/docs?search=fox`)).sort()).toEqual(["one fox", "three foxes", "two foxes"]);
    const ties = await t.req("GET", "/api/v1/docs?search=hedgehog");
    const ids = ties.body.items.map((r: { _id: string }) => r._id);
    expect(ids).toHaveLength(5);
    expect(ids).toEqual([...ids].sort());
    for (const q of ["hedgehog", "fox OR hedgehog OR dog"]) {
      const all = await t.req("GET", `/api/v1/docs?search=${enc(q)}&limit=100`);
      const walked: string[] = [];
      let after: string | null = null;
      do {
        const page: { body: { items: { _id: string }[]; next_cursor: string | null } } = await t.req("GET", `/api/v1/docs?search=${enc(q)}&limit=2${after ? `&after=${after}` : ""}`);
        walked.push(...page.body.items.map((r) => r._id));
        after = page.body.next_cursor;
      } while (after && walked.length < 50);
      expect(walked).toEqual(all.body.items.map((r: { _id: string }) => r._id));
    }
    // A record that does not match the search is no cursor for it.
    const dog = (await t.req("GET", "/api/v1/docs?search=dog")).body.items[0]._id;
    expect((await t.req("GET", `/api/v1/docs?search=hedgehog&after=${dog}`)).status).toBe(400);
  });

  test("every word is found, short and common ones too, and accents are ignored, as on SQLite", async () => {
    expect((await titles(`/api/v1/docs?search=the`)).sort()).toEqual(["a dog", "one fox"]);
    expect(await titles(`/api/v1/docs?search=${enc("the dog")}`)).toEqual(["a dog"]);
    expect(await titles(`/api/v1/docs?search=${enc('"the dog"')}`)).toEqual(["a dog"]);
    expect((await titles(`/api/v1/docs?search=${enc("the NOT dog")}`)).sort()).toEqual(["one fox"]);
    expect((await titles(`/api/v1/docs?search=a*`)).sort()).toEqual(["a dog"]);
    await createCollection(t, "cafes", { read: "public" });
    expect((await t.admin("POST", "/api/v1/admin/collections/cafes/fts")).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/cafes/bulk", [{ title: "café au lait" }, { title: "naïve résumé" }, { title: "it is what it is" }])).status).toBe(201);
    for (const [q, found] of [["cafe", "café au lait"], ["CAFÉ", "café au lait"], ["resume", "naïve résumé"], ['"it is"', "it is what it is"], ["what", "it is what it is"]] as const)
      expect({ q, found: await titles(`/api/v1/cafes?search=${enc(q)}`) }).toEqual({ q, found: [found] });
  });
});

describe("hostile search text", () => {
  test("is answered 200 or 400, never 500, on list, count and aggregate", async () => {
    expect((await indexed("hostile", [{ title: "the quick brown fox 東京", n: 1 }])).status).toBe(201);
    const inputs = [
      "東".repeat(1000), "é".repeat(1000), "x".repeat(1000), "a ".repeat(499), `${"a OR ".repeat(199)}a`,
      `${"(".repeat(300)}fox${")".repeat(300)}`, "(".repeat(999), "NOT ".repeat(10), "a:*", "fox:*", "'fox'", "fox\\", "!fox",
      "fox & dog", "fox <-> dog", "fox | !", "fox:A", "<->", "&&", "'", "''", "\"", '"" fox', "*fox", "fox**", '"quick br"*',
      "😀🔥", "\u202e", "NEAR(a b)", "title:fox", "' OR 1=1 --", "fox; DROP TABLE hostile",
    ];
    for (const q of inputs) {
      for (const path of ["/api/v1/hostile?", "/api/v1/hostile/count?", "/api/v1/hostile/aggregate?fn=sum&field=n&"]) {
        const res = await t.req("GET", `${path}search=${enc(q)}`);
        if (res.status !== 200) expect({ q, status: res.status, code: res.body.code }).toEqual({ q, status: 400, code: "bad_request" });
      }
    }
    expect(await titles("/api/v1/hostile?search=fox")).toEqual(["the quick brown fox 東京"]);
  });
});

describe("a query nested very deeply", () => {
  test("is 400 on SQLite (FTS5's parser stack), answered on PostgreSQL", async () => {
    expect((await indexed("nested", [{ title: "alpha" }])).status).toBe(201);
    const q = `${"alpha AND (".repeat(40)}alpha${")".repeat(40)}`;
    const res = await t.req("GET", `/api/v1/nested?search=${enc(q)}`);
    if (onPostgres) expect(res.body.items.map((r: { title: string }) => r.title)).toEqual(["alpha"]);
    else expect(res.body).toEqual({ error: "invalid search query: parser stack overflow", code: "bad_request" });
  });
});
