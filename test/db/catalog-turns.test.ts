import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { findCollection } from "../../src/catalog/catalog.ts";
import { appPerTest, createCollection } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// The server asks SQLite whether another process committed at most once per event-loop turn. A turn begun
// outside a request's dispatch (the continuation of a batched read or of a group commit runs in an
// immediate) must not stand for the requests dispatched after it: one that comes after another process
// committed sees that commit.

const t = appPerTest(async (t) => {
  await createCollection(t, "posts", { read: "public", create: "public" });
});

/** Makes collection `name` as another process would: its own connection, committed at once. */
function createElsewhere(file: string, name: string): void {
  const raw = new Database(file);
  try {
    raw.exec("PRAGMA busy_timeout = 5000");
    const ddl = raw.query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'posts'").get()!.sql;
    raw.transaction(() => {
      raw.exec(ddl.replace('"posts"', `"${name}"`));
      raw.query("INSERT INTO _collections SELECT ?, rules, field_rules, fields, indexes, fts, created_at, updated_at FROM _collections WHERE name = 'posts'").run(name);
      raw.exec("UPDATE _meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'schema_version'");
    })();
  } finally {
    raw.close();
  }
}

test.skipIf(onPostgres)("a request dispatched after another process committed sees it, though a lookup outside any request checked just before", async () => {
  expect((await t.req("GET", "/api/v1/late/count")).status).toBe(404);
  const answer = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    setImmediate(async () => {
      try {
        // A lookup in an immediate (no request being dispatched) checks the catalog: its turn begins here.
        await findCollection(t.ctx, "posts");
        createElsewhere(t.config.dbPath, "late");
        const res = await t.app.handle(new Request("http://localhost/api/v1/late/count"));
        resolve({ status: res.status, body: await res.json() });
      } catch (err) {
        reject(err);
      }
    });
  });
  expect(answer).toEqual({ status: 200, body: { total: 0 } });
});
