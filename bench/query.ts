// Query engine benchmark: seeds 100,000 records, then times the service functions behind
// list (filtered + sorted, limit 50), a cursor walk, count, aggregate with group_by and
// search, each against a bare bun:sqlite query doing the same work on the same database.
// `bun bench/query.ts [records] [workload-name-part]` prints a table; the target is a ratio of at most 1.5.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN } from "../src/principal.ts";
import { createCollection } from "../src/collections/admin.ts";
import { createIndexDef } from "../src/collections/indexes.ts";
import { loadConfig } from "../src/config.ts";
import { closeContext, createContext } from "../src/app-context.ts";
import { memoryLogger } from "../src/log.ts";
import { aggregateRecords } from "../src/records/aggregate.ts";
import { countRecords } from "../src/records/count.ts";
import { createRecord } from "../src/records/create.ts";
import { newRecordId } from "../src/ids.ts";
import { listRecords } from "../src/records/list.ts";
import { enableFts } from "../src/search/fts.ts";
import { rawDatabase } from "../src/db/sqlite.ts";

const N = Number(process.argv[2] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), "baas-bench-query-"));
const ctx = createContext(loadConfig({ data: dir, port: 0 }, { ADMIN_SECRET: "bench-secret-0123456789" }), { log: memoryLogger() });
const db = rawDatabase(ctx.db);

const WORDS =
  "apple river stone cloud running quick brown fox lazy dog garden market silver window engine forest ocean paper candle bridge".split(
    " ",
  );
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = () => WORDS[Math.floor(rand() * WORDS.length)];
const sentence = (n: number) => Array.from({ length: n }, pick).join(" ");

// Seed: the first record goes through the service to fix the field types, the rest in one
// transaction straight into the table (the FTS index is built afterwards, as an admin would).
await createCollection(ctx, { name: "items", rules: { read: "public" } });
await createRecord(ctx, "items", { title: "seed", body: "seed", category: "c0", score: 0.5, n: 0 }, ADMIN);
const t0 = performance.now();
const insert = db.query(
  `INSERT INTO "items" ("_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at", "title", "body", "category", "score", "n")
   VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?)`,
);
db.transaction(() => {
  const now = Date.now();
  for (let i = 1; i < N; i++)
    insert.run(newRecordId(now + i), now + i, now + i, sentence(3), sentence(12), `c${i % 20}`, Math.round(rand() * 1e6) / 1e3, i);
})();
await createIndexDef(ctx, "items", { fields: ["category", "score"] });
await enableFts(ctx, "items");
db.exec("ANALYZE");
const seedMs = performance.now() - t0;

const COLS = `"_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at", "title", "body", "category", "score", "n"`;
type Row = Record<string, unknown>;

/**
 * Mean µs of CPU time per call of `fn` after a warm-up, over at least `minMs` of CPU. CPU
 * time (not wall time) keeps the figures honest on a machine busy with other work.
 */
async function time(fn: () => unknown, minMs = 1500): Promise<number> {
  for (let i = 0; i < 20; i++) await fn();
  const cpu = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  let calls = 0;
  const start = cpu();
  let used = 0;
  while (used < minMs * 1000) {
    for (let i = 0; i < 10; i++) await fn();
    calls += 10;
    used = cpu() - start;
  }
  return used / calls;
}

const params = (s: string) => new URLSearchParams(s);

// 1. list, filtered and sorted, offset mode (a page of 50 plus `total`)
const bareList = db.query<Row, [string]>(
  `SELECT ${COLS} FROM "items" WHERE "_deleted_at" IS NULL AND "category" = ? ORDER BY "score" DESC, "_id" ASC LIMIT 51`,
);
const bareCount = db.query<{ n: number }, [string]>(`SELECT COUNT(*) AS n FROM "items" WHERE "_deleted_at" IS NULL AND "category" = ?`);
const listCase = {
  name: "list filter+sort, limit 50 (with total)",
  baas: () => listRecords(ctx, "items", params("filter=category:eq:c7&sort=-score&limit=50"), ADMIN, { limit: 50 }),
  bare: () => {
    const rows = bareList.all("c7");
    return { rows, total: bareCount.get("c7")!.n };
  },
};

// 2. cursor walk over one category (about N/20 records), 50 a page, newest score first
const bareKeyset = db.query<Row, [string, number, number, string]>(
  `SELECT ${COLS} FROM "items" WHERE "_deleted_at" IS NULL AND "category" = ?
   AND "score" <= ? AND ("score" < ? OR "_id" > ?) ORDER BY "score" DESC, "_id" ASC LIMIT 51`,
);
const walkCase = {
  name: "cursor walk, whole category, 50/page",
  baas: async () => {
    let after: string | null = null;
    let pages = 0;
    do {
      const page = await listRecords(ctx, "items", params(`filter=category:eq:c3&sort=-score&limit=50${after ? `&after=${after}` : ""}`), ADMIN, { limit: 50 });
      after = page.next_cursor;
      pages++;
    } while (after);
    return pages;
  },
  bare: () => {
    // The first page is an offset-mode page, which answers `total` too.
    let rows = bareList.all("c3");
    bareCount.get("c3");
    let pages = 1;
    while (rows.length > 50) {
      const last = rows[49];
      rows = bareKeyset.all("c3", last.score as number, last.score as number, last._id as string);
      pages++;
    }
    return pages;
  },
};

// 3. count with a filter
const countCase = {
  name: "count with filter",
  baas: () => countRecords(ctx, "items", params("filter=category:eq:c11"), ADMIN, {}),
  bare: () => bareCount.get("c11"),
};

// 4. aggregate with group_by over every record
const bareAgg = db.query<Row, []>(
  `SELECT "category" AS g, AVG("score") AS value FROM "items" WHERE "_deleted_at" IS NULL GROUP BY "category" ORDER BY "category" ASC`,
);
const aggCase = {
  name: "aggregate avg(score) group_by category",
  baas: () => aggregateRecords(ctx, "items", params("fn=avg&field=score&group_by=category"), ADMIN, {}),
  bare: () => bareAgg.all(),
};

// 5. full-text search, best match first, a page of 50 plus `total`
const bareSearch = db.query<Row, [string]>(
  `SELECT ${COLS.split(", ")
    .map((c) => `i.${c}`)
    .join(", ")} FROM "items" i JOIN "_fts_items" ON "_fts_items".rowid = i.rowid
   WHERE "_fts_items" MATCH ? AND i."_deleted_at" IS NULL ORDER BY "_fts_items".rank, i."_id" LIMIT 51`,
);
const bareSearchCount = db.query<{ n: number }, [string]>(
  `SELECT COUNT(*) AS n FROM "items" i JOIN "_fts_items" ON "_fts_items".rowid = i.rowid WHERE "_fts_items" MATCH ? AND i."_deleted_at" IS NULL`,
);
const searchCase = {
  name: 'search "silver candle" (ranked, limit 50, total)',
  baas: () => listRecords(ctx, "items", params(`search=${encodeURIComponent('"silver candle"')}&limit=50`), ADMIN, { limit: 50 }),
  bare: () => ({ rows: bareSearch.all('"silver candle"'), total: bareSearchCount.get('"silver candle"')!.n }),
};

const sanity = await listRecords(ctx, "items", params("filter=category:eq:c7&sort=-score&limit=50"), ADMIN, { limit: 50 });
if (JSON.stringify(sanity.items.map((r) => r._id)) !== JSON.stringify(bareList.all("c7").slice(0, 50).map((r) => r._id)))
  throw new Error("baas and the bare query disagree on the list");
if ((await walkCase.baas()) !== walkCase.bare()) throw new Error("baas and the bare query disagree on the walk");

const only = process.argv[3];
const cases = [listCase, walkCase, countCase, aggCase, searchCase].filter((c) => !only || c.name.includes(only));
const lines = [`records: ${N}, seeded in ${(seedMs / 1000).toFixed(1)} s (bulk SQL, index on (category, score), FTS built)`, ""];
lines.push("| workload | baas µs/op | bare µs/op | ratio |", "|---|---:|---:|---:|");
let worst = 0;
for (const c of cases) {
  // Alternate the two, twice each, and keep each one's best run: less noise from the rest of the machine.
  let bare = Infinity;
  let baas = Infinity;
  for (let round = 0; round < 2; round++) {
    bare = Math.min(bare, await time(c.bare));
    baas = Math.min(baas, await time(c.baas));
  }
  const ratio = baas / bare;
  worst = Math.max(worst, ratio);
  lines.push(`| ${c.name} | ${baas.toFixed(1)} | ${bare.toFixed(1)} | ${ratio.toFixed(2)} |`);
}
lines.push("", `worst ratio ${worst.toFixed(2)} (target ≤ 1.5)`);
console.log(lines.join("\n"));
await closeContext(ctx);
rmSync(dir, { recursive: true, force: true });
