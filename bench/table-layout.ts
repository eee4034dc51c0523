// W4's table, alone: 100,000 rows of the shared workload's shape inserted in transactions of 500 into several
// layouts of a collection's table, without HTTP, validation or anything else of baas. It tells what the storage
// engine itself costs per record for each layout: how far a layout can take W4 before any JavaScript.
//
//   bun bench/table-layout.ts [rows=100000] [rounds=3]              SQLite (bun:sqlite, WAL, synchronous=NORMAL)
//   DATABASE_URL=postgres://… bun bench/table-layout.ts [rows] [rounds]   PostgreSQL (Bun.sql, a fresh table each run)
//
// Layouts (SQLite): `ceiling` (integer key, one index on `n`: the bare server's table), `baas` (today's: text
// `_id` primary key on a rowid table, owner index `(_owner_id, _id)`, `(n, _deleted_at)`), `baas-no-owner` (the
// same without the owner index), `blob16` (today's with the ULID as 16 bytes instead of 26 characters, owner id too),
// `blob16-without-rowid` (the 16-byte id as the table's own key), `text-without-rowid`. PostgreSQL: `ceiling`
// (bigserial key, index on `n`), `baas` (text ids), `uuid16` (the ULID's 16 bytes as `uuid`, owner id too).
// Prints records/s and CPU µs per row (this process's CPU: SQLite runs in it; for PostgreSQL also the CPU of the
// connection's server process, read from /proc when PostgreSQL runs on this machine) as the median of the rounds,
// the layouts interleaved round by round.
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newRecordId } from "../src/ids.ts";

const ROWS = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const CHUNK = 500;
const PG = process.env.DATABASE_URL;

const COLORS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"];
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
interface Row { id: string; title: string; n: number; tags: string; done: number }
const owner = newRecordId(Date.now());

/** The rows, made before any clock starts (the same for every layout). */
function makeRows(): Row[] {
  const rows: Row[] = [];
  for (let i = 0; i < ROWS; i++)
    rows.push({
      id: newRecordId(Date.now()),
      title: `seed post ${String(i).padStart(8, "0")} lorem ipsum`,
      n: Math.floor(rand() * 1000),
      tags: JSON.stringify([COLORS[Math.floor(rand() * 8)], COLORS[Math.floor(rand() * 8)]]),
      done: rand() < 0.5 ? 1 : 0,
    });
  return rows;
}

// Crockford base32 → the ULID's 16 bytes.
const DIGITS = new Map([..."0123456789ABCDEFGHJKMNPQRSTVWXYZ"].map((c, i) => [c, i]));
function ulidBytes(id: string): Uint8Array {
  let v = 0n;
  for (const c of id) v = (v << 5n) | BigInt(DIGITS.get(c)!);
  const out = new Uint8Array(16);
  for (let i = 15; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}
const ulidUuid = (id: string) => Buffer.from(ulidBytes(id)).toString("hex").replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1-$2-$3-$4-");

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const SYSTEM = `"_created_at" INTEGER NOT NULL, "_updated_at" INTEGER NOT NULL, "_deleted_at" INTEGER, "title" TEXT, "n" INTEGER, "tags" TEXT, "done" INTEGER`;
const sqliteLayouts: Record<string, { ddl: string[]; blob: boolean; rowid?: boolean }> = {
  ceiling: { ddl: [`CREATE TABLE t ("id" INTEGER PRIMARY KEY, ${SYSTEM}, "_owner_id" TEXT)`, `CREATE INDEX t_n ON t ("n")`], blob: false, rowid: true },
  baas: {
    ddl: [`CREATE TABLE t ("_id" TEXT PRIMARY KEY NOT NULL, ${SYSTEM}, "_owner_id" TEXT)`, `CREATE INDEX t_owner ON t ("_owner_id", "_id")`, `CREATE INDEX t_n ON t ("n", "_deleted_at")`],
    blob: false,
  },
  "baas-no-owner": { ddl: [`CREATE TABLE t ("_id" TEXT PRIMARY KEY NOT NULL, ${SYSTEM}, "_owner_id" TEXT)`, `CREATE INDEX t_n ON t ("n", "_deleted_at")`], blob: false },
  blob16: {
    ddl: [`CREATE TABLE t ("_id" BLOB PRIMARY KEY NOT NULL, ${SYSTEM}, "_owner_id" BLOB)`, `CREATE INDEX t_owner ON t ("_owner_id", "_id")`, `CREATE INDEX t_n ON t ("n", "_deleted_at")`],
    blob: true,
  },
  "blob16-without-rowid": {
    ddl: [`CREATE TABLE t ("_id" BLOB PRIMARY KEY NOT NULL, ${SYSTEM}, "_owner_id" BLOB) WITHOUT ROWID`, `CREATE INDEX t_owner ON t ("_owner_id", "_id")`, `CREATE INDEX t_n ON t ("n", "_deleted_at")`],
    blob: true,
  },
  "text-without-rowid": {
    ddl: [`CREATE TABLE t ("_id" TEXT PRIMARY KEY NOT NULL, ${SYSTEM}, "_owner_id" TEXT) WITHOUT ROWID`, `CREATE INDEX t_owner ON t ("_owner_id", "_id")`, `CREATE INDEX t_n ON t ("n", "_deleted_at")`],
    blob: false,
  },
};

function sqliteRun(name: string, rows: Row[]): { rps: number; cpu: number } {
  const layout = sqliteLayouts[name]!;
  const dir = mkdtempSync(join(tmpdir(), "baas-layout-"));
  const db = new Database(join(dir, "t.db"));
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  for (const s of layout.ddl) db.exec(s);
  const insert = layout.rowid
    ? db.prepare(`INSERT INTO t ("_created_at", "_updated_at", "_owner_id", "_deleted_at", "title", "n", "tags", "done") VALUES (?, ?, ?, NULL, ?, ?, ?, ?)`)
    : db.prepare(`INSERT INTO t ("_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at", "title", "n", "tags", "done") VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?)`);
  const ids = layout.blob ? rows.map((r) => ulidBytes(r.id)) : null;
  const ownerValue = layout.blob ? ulidBytes(owner) : owner;
  const begin = db.prepare("BEGIN");
  const commit = db.prepare("COMMIT");
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let at = 0; at < rows.length; at += CHUNK) {
    begin.run();
    const now = Date.now();
    for (let i = at; i < Math.min(rows.length, at + CHUNK); i++) {
      const r = rows[i]!;
      if (layout.rowid) insert.run(now, now, ownerValue, r.title, r.n, r.tags, r.done);
      else insert.run(ids ? ids[i]! : r.id, now, now, ownerValue, r.title, r.n, r.tags, r.done);
    }
    commit.run();
  }
  const wall = performance.now() - t0;
  const cpu = cpuMs() - c0;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { rps: (rows.length / wall) * 1000, cpu: (cpu * 1000) / rows.length };
}

const pgLayouts: Record<string, { ddl: string[]; uuid: boolean; serial?: boolean }> = {
  ceiling: { ddl: [`CREATE TABLE t (id bigserial PRIMARY KEY, _created_at bigint NOT NULL, _updated_at bigint NOT NULL, _owner_id text, _deleted_at bigint, title text, n double precision, tags jsonb, done boolean)`, `CREATE INDEX t_n ON t (n)`], uuid: false, serial: true },
  baas: {
    ddl: [`CREATE TABLE t (_id text PRIMARY KEY, _created_at bigint NOT NULL, _updated_at bigint NOT NULL, _owner_id text, _deleted_at bigint, title text, n double precision, tags jsonb, done boolean)`, `CREATE INDEX t_owner ON t (_owner_id, _id)`, `CREATE INDEX t_n ON t (n, _deleted_at)`],
    uuid: false,
  },
  uuid16: {
    ddl: [`CREATE TABLE t (_id uuid PRIMARY KEY, _created_at bigint NOT NULL, _updated_at bigint NOT NULL, _owner_id uuid, _deleted_at bigint, title text, n double precision, tags jsonb, done boolean)`, `CREATE INDEX t_owner ON t (_owner_id, _id)`, `CREATE INDEX t_n ON t (n, _deleted_at)`],
    uuid: true,
  },
};

/** CPU ms the connection's server process has used (it runs on this machine), or NaN when it cannot be read. */
async function backendCpuMs(sql: InstanceType<typeof Bun.SQL>): Promise<number> {
  const [{ pid }] = await sql.unsafe("SELECT pg_backend_pid() AS pid");
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

async function pgRun(sql: InstanceType<typeof Bun.SQL>, name: string, rows: Row[]): Promise<{ rps: number; cpu: number; server: number }> {
  const layout = pgLayouts[name]!;
  await sql.unsafe("DROP TABLE IF EXISTS t");
  for (const s of layout.ddl) await sql.unsafe(s);
  const ownerValue = layout.uuid ? ulidUuid(owner) : owner;
  const ids = layout.uuid ? rows.map((r) => ulidUuid(r.id)) : rows.map((r) => r.id);
  const text = layout.serial
    ? `INSERT INTO t (_created_at, _updated_at, _owner_id, _deleted_at, title, n, tags, done) VALUES ($1, $2, $3, NULL, $4, $5, $6::jsonb, $7)`
    : `INSERT INTO t (_id, _created_at, _updated_at, _owner_id, _deleted_at, title, n, tags, done) VALUES ($1${layout.uuid ? "::uuid" : ""}, $2, $3, $4${layout.uuid ? "::uuid" : ""}, NULL, $5, $6, $7::jsonb, $8)`;
  const s0 = await backendCpuMs(sql);
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let at = 0; at < rows.length; at += CHUNK) {
    await sql.begin(async (tx) => {
      const now = Date.now();
      const runs: Promise<unknown>[] = [];
      for (let i = at; i < Math.min(rows.length, at + CHUNK); i++) {
        const r = rows[i]!;
        const params = layout.serial ? [now, now, ownerValue, r.title, r.n, r.tags, r.done === 1] : [ids[i], now, now, ownerValue, r.title, r.n, r.tags, r.done === 1];
        runs.push(tx.unsafe(text, params));
      }
      await Promise.all(runs);
    });
  }
  const wall = performance.now() - t0;
  const cpu = cpuMs() - c0;
  const server = (await backendCpuMs(sql)) - s0;
  return { rps: (rows.length / wall) * 1000, cpu: (cpu * 1000) / rows.length, server: (server * 1000) / rows.length };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = makeRows();
const names = PG ? Object.keys(pgLayouts) : Object.keys(sqliteLayouts);
const results = new Map<string, { rps: number; cpu: number; server?: number }[]>(names.map((n) => [n, []]));
const sql = PG ? new Bun.SQL(PG, { max: 1 }) : null;
for (let round = 0; round < ROUNDS; round++)
  for (const name of names) results.get(name)!.push(sql ? await pgRun(sql, name, rows) : sqliteRun(name, rows));
if (sql) {
  await sql.unsafe("DROP TABLE IF EXISTS t");
  await sql.close();
}
console.log(`| Layout (${PG ? "PostgreSQL" : "SQLite"}, ${ROWS.toLocaleString("en-US")} rows, transactions of ${CHUNK}, median of ${ROUNDS}) | records/s | CPU µs per row${PG ? " (this process) | PostgreSQL's CPU µs per row" : ""} |`);
console.log(PG ? "|---|---:|---:|---:|" : "|---|---:|---:|");
for (const name of names) {
  const r = results.get(name)!;
  const server = PG ? ` ${median(r.map((x) => x.server ?? NaN)).toFixed(2)} |` : "";
  console.log(`| ${name} | ${Math.round(median(r.map((x) => x.rps))).toLocaleString("en-US")} | ${median(r.map((x) => x.cpu)).toFixed(2)} |${server}`);
}
