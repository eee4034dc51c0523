import { afterEach, describe, expect, test } from "bun:test";
import { openPostgres } from "../../src/db/postgres.ts";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { freshDatabaseUrl, onPostgres } from "../helpers/engine.ts";

// A grouped create whose INSERT outlasts the statement timeout: that create is 503 `unavailable` (with
// Retry-After), every other create of its burst is 201 and stored, wherever the slow one stands in its group.

describe.skipIf(!onPostgres)("a statement timeout inside a group of creates", () => {
  let t: TestApp;
  afterEach(() => t.close());

  test("only the slow create fails, with 503; the others of its burst are stored", async () => {
    const url = await freshDatabaseUrl();
    // Set up with the usual timeout: on a loaded machine a statement of it (DDL) may take longer than 300 ms.
    const setup = createTestApp({ context: { engine: openPostgres({ url, poolSize: 2 }) } });
    try {
      await createCollection(setup, "items", { read: "public", create: "public" });
      expect((await setup.req("POST", "/api/v1/items", { body: { code: "x", n: 0 } })).status).toBe(201);
      // A row with a negative n takes a second to insert.
      await setup.db.exec(`CREATE FUNCTION slow_items() RETURNS trigger AS $$ BEGIN IF NEW.n < 0 THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
      await setup.db.exec(`CREATE TRIGGER slow_items BEFORE INSERT ON "items" FOR EACH ROW EXECUTE FUNCTION slow_items()`);
    } finally {
      await setup.close();
    }
    t = createTestApp({ context: { engine: openPostgres({ url, poolSize: 4, statementTimeoutMs: 300 }) } });
    for (const slow of [0, 7]) {
      const bodies = Array.from({ length: 30 }, (_, i) => ({ code: `c${slow}-${i}`, n: i === slow ? -1 : i + 1 }));
      const res = await Promise.all(bodies.map((body) => t.req("POST", "/api/v1/items", { body })));
      expect(res.map((r) => r.status)).toEqual(bodies.map((_, i) => (i === slow ? 503 : 201)));
      expect(res[slow]!.body.code).toBe("unavailable");
      expect(res[slow]!.headers.get("retry-after")).toBe("1");
      const stored = (await t.db.all<{ code: string }>(`SELECT "code" FROM "items"`)).map((r) => r.code).filter((c) => c.startsWith(`c${slow}-`));
      expect(stored.sort()).toEqual(bodies.filter((_, i) => i !== slow).map((b) => b.code).sort());
    }
  });
});
