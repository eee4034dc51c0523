import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureAdminSecret } from "../../src/auth/admin.ts";
import { loadConfig } from "../../src/config.ts";
import { closeContext, createContext } from "../../src/app-context.ts";
import { type AppContext } from "../../src/context.ts";
import { sha256 } from "../../src/crypto.ts";
import { getMeta } from "../../src/db/meta.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { memoryLogger } from "../../src/log.ts";
import { freshDatabaseUrl } from "../helpers/engine.ts";
import { postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";

// Nodes started together on a fresh database, without ADMIN_SECRET: one secret is generated and
// stored; the node that lost the race uses it and prints none, so no printed secret is a dead one.

warnIfSkipped();
const contexts: AppContext[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const c of contexts) await closeContext(c);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test.skipIf(!postgresAvailable)("two nodes settling the first admin secret at once: exactly one generates it, and it is the stored one", async () => {
  const url = await freshDatabaseUrl();
  for (let i = 0; i < 2; i++) {
    const dir = mkdtempSync(join(tmpdir(), "baas-node-"));
    dirs.push(dir);
    const config = loadConfig({ data: dir, port: 0 }, {});
    contexts.push(createContext(config, { engine: openPostgres({ url, poolSize: 2 }), log: memoryLogger() }));
  }
  // Both connected first, so neither is done before the other starts.
  await Promise.all(contexts.map((c) => c.db.get("SELECT 1 AS one")));
  const states = await Promise.all(contexts.map((c) => ensureAdminSecret(c)));
  const generated = states.map((s) => s.generated).filter((g): g is string => g !== null);
  expect(generated).toHaveLength(1);
  expect(states.map((s) => s.source).sort()).toEqual(["generated", "stored"]);
  expect(await getMeta(contexts[0].db, "admin_secret_hash")).toBe(sha256(generated[0]));
});
