import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openPostgres, type PostgresEngine } from "../../src/db/postgres.ts";
import { createTestDatabase, postgresAvailable, startCluster, warnIfSkipped } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";

// Change notices between nodes sharing one PostgreSQL database (LISTEN/NOTIFY): what several baas
// processes use to drop what they cache when another one changed it.

warnIfSkipped();

/** Sends a notice on `channel` as a node does (in a transaction: with its commit). */
const notify = (db: PostgresEngine, channel: string, payload: string) => db.get("SELECT pg_notify(?, ?) AS sent", [channel, payload]);

describe.skipIf(!postgresAvailable)("change notices between nodes", () => {
  let a: PostgresEngine;
  let b: PostgresEngine;
  const callbackErrors: unknown[] = [];

  beforeAll(async () => {
    const url = await createTestDatabase();
    a = openPostgres({ url, poolSize: 2 });
    b = openPostgres({ url, poolSize: 2, onCallbackError: (err) => callbackErrors.push(err) });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  test("a notice sent by one node reaches a listener on another", async () => {
    const got: string[] = [];
    const stop = await b.listen("baas_plain", (p) => got.push(p));
    try {
      await notify(a, "baas_plain", "collections:posts");
      await waitFor(() => got.length === 1, { what: "the notice" });
      expect(got).toEqual(["collections:posts"]);
    } finally {
      await stop();
    }
  });

  test("a notice sent in a transaction goes out with its commit, never with a rollback, nor with a rolled-back savepoint", async () => {
    const got: string[] = [];
    const stop = await b.listen("baas_tx", (p) => got.push(p));
    try {
      await a
        .transaction(async () => {
          await notify(a, "baas_tx", "rolled back");
          throw new Error("undo");
        })
        .catch(() => {});
      await a.transaction(async () => {
        await a
          .transaction(async () => {
            await notify(a, "baas_tx", "savepoint rolled back");
            throw new Error("undo the savepoint");
          })
          .catch(() => {});
        await a.transaction(async () => notify(a, "baas_tx", "committed"));
      });
      await waitFor(() => got.length > 0, { what: "the committed notice" });
      expect(got).toEqual(["committed"]);
    } finally {
      await stop();
    }
  });

  test("a listener callback that throws is reported, and the next notices still arrive", async () => {
    const got: string[] = [];
    const stop = await b.listen("baas_throw", (p) => {
      if (p === "bad") throw new Error("listener failed");
      got.push(p);
    });
    try {
      await notify(a, "baas_throw", "bad");
      await notify(a, "baas_throw", "good");
      await waitFor(() => got.length === 1, { what: "the notice after the failing one" });
      expect(got).toEqual(["good"]);
      expect(callbackErrors.map((e) => (e as Error).message)).toEqual(["listener failed"]);
    } finally {
      await stop();
    }
  });
});

describe.skipIf(!postgresAvailable)("change notices across a database restart", () => {
  test("the listener subscribes again when the server is back, says so (to re-validate caches), and hears later notices", async () => {
    const cluster = await startCluster();
    const url = await cluster.createDatabase();
    const a = openPostgres({ url, poolSize: 2, connectTimeoutS: 2 });
    const b = openPostgres({ url, poolSize: 2, connectTimeoutS: 2 });
    try {
      const got: string[] = [];
      let listens = 0;
      await b.listen("baas_restart", (p) => got.push(p), () => listens++);
      expect(listens).toBe(1);
      cluster.stop();
      cluster.start();
      await waitFor(() => listens >= 2, { timeoutMs: 30_000, what: "the listener to subscribe again" });
      await waitFor(
        async () => {
          try {
            await notify(a, "baas_restart", "after restart");
            return true;
          } catch {
            return false;
          }
        },
        { timeoutMs: 30_000, what: "node A to reach the database again" },
      );
      await waitFor(() => got.includes("after restart"), { what: "the notice after the restart" });
    } finally {
      await a.close();
      await b.close();
      cluster.destroy();
    }
   }, 60_000);
});
