import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureAdminSecret } from "../../src/auth/admin.ts";
import { ensureJwtKey } from "../../src/auth/keys.ts";
import { loadConfig } from "../../src/config.ts";
import { closeContext, createContext } from "../../src/app-context.ts";
import { type AppContext } from "../../src/context.ts";
import type { SqlValue } from "../../src/db/engine.ts";
import { PostgresEngine } from "../../src/db/postgres.ts";
import { createApp } from "../../src/http/app.ts";
import { memoryLogger } from "../../src/log.ts";
import { buildBinary, runCli } from "../helpers/cli.ts";
import { freshDatabaseUrl } from "../helpers/engine.ts";
import { postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";

// Totals (`total` of a list, `/count`) kept in memory on PostgreSQL: a node keeps a count until the
// snapshot it reads once per event-loop turn shows that some transaction committed (on this node,
// another node, or a CLI command). Each node here is a context with a pool of its own on one database.

warnIfSkipped();
const ADMIN_SECRET = "test-admin-secret-0123456789";

/** A PostgreSQL engine that counts the COUNT(*) statements it runs: a total answered from memory runs none. */
class CountingEngine extends PostgresEngine {
  counts = 0;
  override async get<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T | null> {
    if (sql.startsWith("SELECT COUNT(*)")) this.counts++;
    return super.get<T>(sql, params);
  }
}

interface Node {
  ctx: AppContext;
  engine: CountingEngine;
  req(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }>;
}

let url = "";
const nodes: Node[] = [];
const dirs: string[] = [];

async function startNode(): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), "baas-node-"));
  dirs.push(dir);
  const engine = new CountingEngine({ url, poolSize: 4 });
  const ctx = createContext(loadConfig({ data: dir, port: 0 }, { ADMIN_SECRET }), { engine, log: memoryLogger() });
  await ensureJwtKey(ctx);
  await ensureAdminSecret(ctx);
  const app = createApp(ctx, { requestLog: false });
  const node: Node = {
    ctx,
    engine,
    async req(method, path, body, token) {
      const headers: Record<string, string> = {};
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
  };
  nodes.push(node);
  return node;
}

const LIST = "/api/v1/notes?filter=n:gt:2&sort=-n&limit=2";

async function total(node: Node, path = LIST): Promise<number> {
  const res = await node.req("GET", path);
  expect(res.status).toBe(200);
  return res.body.total;
}

async function create(node: Node, n: number) {
  const res = await node.req("POST", "/api/v1/notes", { n });
  expect(res.status).toBe(201);
}

/**
 * What `read` answers, once it was answered twice in a row with no COUNT(*) the second time. A few
 * tries: the cluster's autovacuum commits now and then, and any commit rightly drops the counts.
 */
async function answeredFromMemory(node: Node, read: () => Promise<number>): Promise<number> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const first = await read();
    const before = node.engine.counts;
    const second = await read();
    expect(second).toBe(first);
    if (node.engine.counts === before) return second;
  }
  throw new Error("every repeated total ran a COUNT(*)");
}

let a: Node;
let b: Node;

beforeEach(async () => {
  if (!postgresAvailable) return;
  url = await freshDatabaseUrl();
  a = await startNode();
  b = await startNode();
  const made = await a.req("POST", "/api/v1/admin/collections", { name: "notes", rules: { read: "public", create: "public", update: "public", delete: "public" } }, ADMIN_SECRET);
  expect(made.status).toBe(201);
  for (let n = 0; n < 6; n++) await create(a, n);
});

afterEach(async () => {
  for (const n of nodes.splice(0)) await closeContext(n.ctx);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!postgresAvailable)("totals kept in memory on PostgreSQL", () => {
  test("a repeated total and /count are answered from memory while nothing commits", async () => {
    expect(await answeredFromMemory(a, () => total(a))).toBe(3);
    expect(await answeredFromMemory(a, () => total(a, "/api/v1/notes/count?filter=n:gt:2"))).toBe(3);
  });

  test("a write through this node shows in its next total", async () => {
    expect(await total(a)).toBe(3);
    await create(a, 9);
    expect(await total(a)).toBe(4);
    const first = (await a.req("GET", LIST)).body.items[0]._id;
    expect((await a.req("DELETE", `/api/v1/notes/${first}`)).status).toBe(200);
    expect(await total(a)).toBe(3);
  });

  test("a write through another node shows in this node's next total", async () => {
    expect(await total(a)).toBe(3);
    expect(await total(b)).toBe(3);
    await create(b, 7);
    expect(await total(a)).toBe(4);
    expect(await total(b)).toBe(4);
    // Any other client of the database (a tool, a migration) is seen the same way.
    const other = new PostgresEngine({ url, poolSize: 1 });
    try {
      await other.run('DELETE FROM "notes" WHERE "n" > ?', [4]);
    } finally {
      await other.close();
    }
    expect(await total(a)).toBe(2);
    expect((await a.req("GET", "/api/v1/notes/count?filter=n:gt:2")).body).toEqual({ total: 2 });
  });

  test("a collection dropped and made again by the CLI: the next total is 0", async () => {
    const bin = await buildBinary();
    expect(await total(a)).toBe(3);
    expect(await total(a, "/api/v1/notes?limit=2")).toBe(6);
    const env = { DATABASE_URL: url };
    expect((await runCli(bin, ["collections", "delete", "notes", "--yes"], { env })).code).toBe(0);
    expect((await runCli(bin, ["collections", "create", "notes", "--read", "public", "--create", "public"], { env })).code).toBe(0);
    expect(await total(a, "/api/v1/notes?limit=2")).toBe(0);
    await create(a, 5);
    expect(await total(a)).toBe(1);
  }, 120_000);

  test("totals read on one node while another writes are never stale", async () => {
    let reading = true;
    // Readers fill and use the cache all along, so counts run across the other node's commits.
    const readers = Array.from({ length: 3 }, async () => {
      while (reading) await total(a);
    });
    try {
      for (let i = 1; i <= 15; i++) {
        await create(b, 100 + i);
        // Every request sent after the write was acknowledged counts it.
        const seen = await Promise.all([total(a), total(a), total(a, "/api/v1/notes/count?filter=n:gt:2")]);
        expect(seen).toEqual([3 + i, 3 + i, 3 + i]);
      }
    } finally {
      reading = false;
      await Promise.all(readers);
    }
  }, 60_000);
});
