import { afterEach, beforeEach } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureAdminSecret } from "../../src/auth/admin.ts";
import { ensureJwtKey } from "../../src/auth/keys.ts";
import { ManualClock } from "../../src/clock.ts";
import { loadConfig, type Config } from "../../src/config.ts";
import { closeContext, createContext } from "../../src/app-context.ts";
import { type AppContext, type ContextOptions } from "../../src/context.ts";
import { createApp } from "../../src/http/app.ts";
import { memoryLogger } from "../../src/log.ts";
import { rawDatabase } from "../../src/db/sqlite.ts";
import type { Database } from "bun:sqlite";
import { databaseUrlForDir, lazyPostgres, onPostgres } from "./engine.ts";

export const ADMIN_SECRET = "test-admin-secret-0123456789";

export interface TestApp {
  ctx: AppContext;
  app: ReturnType<typeof createApp>;
  clock: ManualClock;
  dir: string;
  config: Config;
  log: ReturnType<typeof memoryLogger>;
  /** Settles when the JWT key and admin secret are stored (requests wait for it; await it before calling services on `ctx`). */
  ready: Promise<void>;
  /** The SQLite file's own handle, for tests that look at stored rows directly (SQLite only). */
  readonly sqlite: Database;
  /** The app's storage engine (ctx.db): for tests that look at stored rows on either engine. */
  db: AppContext["db"];
  /** On PostgreSQL, the URL of the app's database (else null). */
  databaseUrl: Promise<string> | null;
  /** Sends a request through app.handle; `body` objects are sent as JSON, strings as they are. */
  req(method: string, path: string, opts?: { body?: unknown; token?: string | null; headers?: Record<string, string> }): Promise<TestResponse>;
  /** The same with the admin secret as Bearer token. */
  admin(method: string, path: string, body?: unknown): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  body: any;
  headers: Headers;
  text: string;
}

/** A fresh app on a fresh temporary data dir, with a manual clock and an in-memory log (request log off unless `requestLog`). */
export function createTestApp(
  opts: { env?: Record<string, string>; context?: ContextOptions; dir?: string; requestLog?: boolean } = {},
): TestApp {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "baas-test-"));
  const config = loadConfig({ data: dir, port: 0 }, { ADMIN_SECRET, ...opts.env });
  const clock = new ManualClock(Date.now());
  const log = memoryLogger();
  // BAAS_TEST_SHOW_ERRORS=1 prints every error the app logs (e.g. the cause of a 500) as it happens.
  if (process.env.BAAS_TEST_SHOW_ERRORS) {
    const keep = log.error;
    log.error = (msg, fields) => {
      console.error(`app error: ${msg}`, fields?.error ?? fields ?? "");
      keep(msg, fields);
    };
  }
  const pg = onPostgres ? lazyPostgres(databaseUrlForDir(dir)) : null;
  const ctx = createContext(config, { clock, log, ...(pg ? { engine: pg.engine } : {}), ...opts.context });
  // Keys and the admin secret are stored before the first request is handled.
  const ready = (async () => {
    await pg?.opened;
    await ensureJwtKey(ctx);
    await ensureAdminSecret(ctx);
  })();
  // The request log is off unless asked for, so tests reading `log.lines` see only the lines they look for.
  const app = createApp(ctx, { requestLog: opts.requestLog ?? false });
  const req: TestApp["req"] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
      headers["content-type"] ??= "application/json";
    }
    await ready;
    const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }));
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers, text };
  };
  const t: Omit<TestApp, "sqlite"> = {
    ctx,
    app,
    clock,
    dir,
    config,
    log,
    ready,
    db: ctx.db,
    databaseUrl: pg?.url ?? null,
    req,
    admin: (method, path, body) => req(method, path, { body, token: ADMIN_SECRET }),
    async close() {
      await ready.catch(() => {});
      await closeContext(ctx);
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  // A getter that is not enumerable: spreading a TestApp (as live apps do) must not ask for it on PostgreSQL.
  return Object.defineProperty(t, "sqlite", { get: () => rawDatabase(ctx.db), enumerable: false }) as TestApp;
}

/** Registers a user and returns its tokens and id. */
export async function registerUser(t: TestApp, email: string, password = "password123") {
  const res = await t.req("POST", "/api/v1/auth/register", { body: { email, password } });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  return { token: res.body.access_token as string, refresh: res.body.refresh_token as string, id: res.body.user.id as string, body: res.body };
}

/**
 * A fresh app for every test of the enclosing scope (the file, or the `describe` it is called in):
 * made in a `beforeEach` (`opts` may be a function, read then), then `setup` runs on it, and it is
 * closed after the test. The returned
 * object forwards to the current test's app, so tests use it like the result of createTestApp.
 */
export function appPerTest(
  setup?: (t: TestApp) => unknown,
  opts: Parameters<typeof createTestApp>[0] | (() => Parameters<typeof createTestApp>[0]) = {},
): TestApp {
  let current: TestApp | null = null;
  beforeEach(async () => {
    current = createTestApp(typeof opts === "function" ? opts() : opts);
    await setup?.(current);
  });
  afterEach(async () => {
    const done = current;
    current = null;
    await done?.close();
  });
  return new Proxy({} as TestApp, {
    get(_target, key) {
      if (!current) throw new Error("the per-test app is used outside a test");
      return Reflect.get(current, key);
    },
  });
}

/** Creates a collection as admin (rules optional, defaults for the rest) and fails loudly if that is refused. */
export async function createCollection(t: TestApp, name: string, rules?: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const res = await t.admin("POST", "/api/v1/admin/collections", { name, ...(rules ? { rules } : {}), ...extra });
  if (res.status !== 201) throw new Error(`create collection ${name} failed: ${res.status} ${res.text}`);
  return res.body;
}

/** Changes server settings as admin and fails loudly if that is refused. */
export async function patchSettings(t: TestApp, settings: Record<string, unknown>) {
  const res = await t.admin("PATCH", "/api/v1/admin/settings", settings);
  if (res.status !== 200) throw new Error(`PATCH settings failed: ${res.status} ${res.text}`);
  return res.body;
}
