import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { rmSync } from "node:fs";
import { TOTP, URI } from "otpauth";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { createTestDatabase, postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// `baas db copy --to postgres://…` (CONTRACT §11): a populated SQLite data directory copied through the
// binary answers a fixed list of reads on PostgreSQL exactly as on SQLite. The source is always SQLite
// (DATABASE_URL "" keeps the test helpers from giving its runs a PostgreSQL database), whichever engine
// the suite runs on.

setDefaultTimeout(120_000);
warnIfSkipped();

const SQLITE = { DATABASE_URL: "" };
const AUTHORS = 40;
const TAGS = 20;
const BOOKS = 940;
const LONG = "l".repeat(64);
const LONG_A = "f".repeat(63) + "a";
const LONG_B = "f".repeat(63) + "b";

describe.skipIf(!postgresAvailable)("db copy", () => {
  let bin: string;
  let dir: string;
  let target: string;
  let copied: { table: string; source: number; target: number }[];
  let totp: TOTP;
  let apiKey: string;
  let before: { access: string; refresh: string };
  const ids = { authors: [] as string[], tags: [] as string[], books: [] as string[], alice: "" };
  let sqlite: ServerProcess;
  let pg: ServerProcess;

  /** A JSON request to a server: status and parsed body. */
  async function call(srv: { url: string }, method: string, path: string, opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(srv.url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
  const admin = (srv: { url: string }, method: string, path: string, body?: unknown) => call(srv, method, path, { body, token: ADMIN_SECRET });
  async function must(srv: { url: string }, method: string, path: string, opts: Parameters<typeof call>[3] = {}) {
    const r = await call(srv, method, path, { token: ADMIN_SECRET, ...opts });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** Builds the SQLite data directory through the HTTP API of a server on it. */
  async function populate(srv: ServerProcess): Promise<void> {
    for (const name of ["authors", "tags", "books"]) await must(srv, "POST", "/api/v1/admin/collections", { body: { name, rules: { read: "public", create: "authenticated", update: "owner", delete: "owner" } } });
    const alice = await must(srv, "POST", "/api/v1/auth/register", { token: "", body: { email: "alice@example.com", password: "alice-password-1" } });
    ids.alice = alice.user.id;
    const bob = await must(srv, "POST", "/api/v1/auth/register", { token: "", body: { email: "bob@example.com", password: "bob-password-12" } });
    before = { access: bob.access_token, refresh: bob.refresh_token };
    await must(srv, "PATCH", `/api/v1/admin/users/${bob.user.id}`, { body: { roles: ["editor"], metadata: { plan: "pro" } } });
    const authors = await must(srv, "POST", "/api/v1/authors/bulk", {
      token: alice.access_token,
      body: Array.from({ length: AUTHORS }, (_, i) => ({ name: `Author ${String(i).padStart(2, "0")}`, born: 1900 + i, active: i % 2 === 0 })),
    });
    ids.authors = authors.map((a: { _id: string }) => a._id);
    const tags = await must(srv, "POST", "/api/v1/tags/bulk", { token: alice.access_token, body: Array.from({ length: TAGS }, (_, i) => ({ name: `tag-${String(i).padStart(2, "0")}` })) });
    ids.tags = tags.map((t: { _id: string }) => t._id);
    await must(srv, "POST", "/api/v1/admin/relations", { body: { from_col: "books", from_field: "author", to_col: "authors", type: "one", on_delete: "cascade" } });
    await must(srv, "POST", "/api/v1/admin/relations", { body: { from_col: "authors", from_field: "books", to_col: "books", type: "many" } });
    await must(srv, "POST", "/api/v1/admin/relations", { body: { from_col: "books", from_field: "tags", to_col: "tags", type: "many_via" } });
    const book = (i: number) => ({
      title: `Book ${i} ${["river", "mountain", "harbour", "garden"][i % 4]} tales`,
      isbn: `isbn-${10_000 + i}`,
      year: 1950 + (i % 70),
      price: (i % 97) * 2,
      in_print: i % 3 === 0,
      meta: { pages: 100 + i, lang: i % 2 ? "en" : "fr" },
      author: ids.authors[i % AUTHORS],
      tags: [...new Set([ids.tags[i % TAGS], ids.tags[(i * 7) % TAGS]])],
    });
    for (let start = 0; start < BOOKS; start += 470) {
      const owner = start === 0 ? alice.access_token : bob.access_token;
      const made = await must(srv, "POST", "/api/v1/books/bulk", { token: owner, body: Array.from({ length: Math.min(470, BOOKS - start) }, (_, k) => book(start + k)) });
      ids.books.push(...made.map((b: { _id: string }) => b._id));
    }
    await must(srv, "POST", "/api/v1/admin/collections/books/indexes", { body: { fields: ["year"] } });
    await must(srv, "POST", "/api/v1/admin/collections/books/indexes", { body: { fields: ["isbn"], unique: true } });
    // A soft-deleted record, and an author whose delete cascades (soft) to its books.
    await must(srv, "DELETE", `/api/v1/books/${ids.books[1]}`, { token: alice.access_token });
    await must(srv, "DELETE", `/api/v1/authors/${ids.authors[39]}`, { token: alice.access_token });
    await must(srv, "POST", "/api/v1/admin/collections/books/fts");
    await must(srv, "PATCH", "/api/v1/admin/settings", { body: { app_name: "Copied", access_token_ttl_seconds: 1200 } });
    // alice: 2FA on, an API key.
    const setup = await must(srv, "POST", "/api/v1/auth/2fa/setup", { token: alice.access_token });
    totp = URI.parse(setup.otpauth_url) as TOTP;
    await must(srv, "POST", "/api/v1/auth/2fa/enable", { token: alice.access_token, body: { code: totp.generate() } });
    apiKey = (await must(srv, "POST", "/api/v1/auth/api-keys", { token: alice.access_token, body: { name: "ci" } })).key;
    // Notes only their owner reads: what an API key sees depends on whose it is.
    await must(srv, "POST", "/api/v1/admin/collections", { body: { name: "notes", rules: { read: "owner", create: "authenticated", update: "owner", delete: "owner" } } });
    await must(srv, "POST", "/api/v1/notes/bulk", { token: alice.access_token, body: [{ text: "a1" }, { text: "a2" }, { text: "a3" }] });
    await must(srv, "POST", "/api/v1/notes/bulk", { token: bob.access_token, body: [{ text: "b1" }, { text: "b2" }] });
    // Names of 64 characters, longer than PostgreSQL's identifiers: two fields that share their first 63.
    await must(srv, "POST", "/api/v1/admin/collections", { body: { name: LONG, rules: { read: "public" } } });
    await must(srv, "POST", `/api/v1/${LONG}/bulk`, { body: [{ [LONG_A]: "one", [LONG_B]: 1 }, { [LONG_A]: "two", [LONG_B]: 2 }] });
    await must(srv, "POST", `/api/v1/admin/collections/${LONG}/indexes`, { body: { fields: [LONG_B], unique: true } });
  }

  beforeAll(async () => {
    bin = await buildBinary();
    dir = tempDataDir();
    const src = await spawnServer({ cmd: [bin], dir, env: SQLITE });
    try {
      await populate(src);
    } finally {
      await src.stop();
    }
    target = await createTestDatabase();
    const r = await runCli(bin, ["--data", dir, "db", "copy", "--to", target, "--json"], { env: SQLITE });
    if (r.code !== 0) throw new Error(`db copy exited ${r.code}: ${r.stderr}`);
    copied = r.json().tables;
    // One public address for both, so settings that show it (OAuth redirect URLs) compare.
    const env = { ...SQLITE, PUBLIC_URL: "https://api.example.test" };
    sqlite = await spawnServer({ cmd: [bin], dir, env });
    pg = await spawnServer({ cmd: [bin], args: ["--database", target], env });
  });
  afterAll(async () => {
    await sqlite?.cleanup();
    await pg?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("prints the row count of every table on both sides, and they agree", () => {
    const byTable = new Map(copied.map((t) => [t.table, t]));
    for (const t of copied) expect(t.target).toBe(t.source);
    expect(byTable.get("books")!.source).toBe(BOOKS);
    expect(byTable.get("authors")!.source).toBe(AUTHORS);
    expect(byTable.get("tags")!.source).toBe(TAGS);
    expect(byTable.get("_users")!.source).toBe(2);
    expect(byTable.get("_api_keys")!.source).toBe(1);
    expect(byTable.get("_recovery_codes")!.source).toBe(10);
    expect(byTable.get("_relations")!.source).toBe(3);
    expect(copied.some((t) => t.table.startsWith("_rel_") && t.source > BOOKS)).toBe(true);
  });

  test("PostgreSQL answers a fixed list of reads exactly as SQLite does, and logins, sessions and API keys made before the copy work", async () => {
    const reads = [
      "/api/v1/books?sort=-year,title&limit=50",
      "/api/v1/books?filter=year:gte:2000&filter=in_print:eq:true&sort=price,-title&limit=100",
      "/api/v1/books?filter=title:like:GARDEN&sort=-price&page=3&limit=20",
      "/api/v1/books?filter=meta:ne:null&fields=title,meta,tags&limit=15&page=4",
      "/api/v1/books?expand=author,tags&limit=30",
      `/api/v1/books?filter=tags:eq:${ids.tags[3]}&limit=500`,
      `/api/v1/books?filter=author:in:${ids.authors[1]},${ids.authors[2]}&sort=year`,
      `/api/v1/books?after=${ids.books[100]}&limit=25&sort=_id`,
      "/api/v1/books?include_deleted=true&filter=_deleted_at:ne:null&limit=500",
      `/api/v1/books/${ids.books[7]}?expand=author,tags`,
      // A book of bob's soft-deleted by its author's cascade: include_deleted shows it to its owner (delete rule).
      `/api/v1/books/${ids.books[ids.books.findIndex((_, i) => i >= 470 && i % AUTHORS === 39)]}?include_deleted=true`,
      "/api/v1/books/count?filter=year:lt:1980",
      "/api/v1/books/aggregate?fn=sum&field=price&group_by=in_print",
      "/api/v1/books/aggregate?fn=count&group_by=year",
      "/api/v1/authors?expand=books&limit=10",
      `/api/v1/authors/${ids.authors[5]}?expand=books`,
      "/api/v1/authors?filter=active:eq:false&sort=-born",
      "/api/v1/tags?sort=-name",
      "/api/v1/books?search=garden&limit=20&sort=_id",
      "/api/v1/books/count?search=river%20OR%20harbour",
      "/api/v1/books?search=%22mountain%20tales%22&filter=year:gte:1990&sort=-year,_id&limit=50",
      `/api/v1/${LONG}?sort=-${LONG_B}`,
    ];
    for (const path of reads) {
      // Soft-deleted records are shown to callers whose delete rule holds (owner): bob, with a token from before the copy.
      const as = path.includes("include_deleted") ? { token: before.access } : {};
      const [a, b] = [await call(sqlite, "GET", path, as), await call(pg, "GET", path, as)];
      expect({ path, ...b }).toEqual({ path, ...a });
      expect({ path, status: a.status }).toEqual({ path, status: 200 });
    }
    // Nobody else sees them: alice's soft-deleted book is 404 to an anonymous caller on both.
    for (const srv of [sqlite, pg]) expect((await call(srv, "GET", `/api/v1/books/${ids.books[1]}?include_deleted=true`)).status).toBe(404);
    const adminReads = [
      "/api/v1/admin/collections",
      "/api/v1/admin/relations",
      "/api/v1/admin/settings",
      "/api/v1/admin/users",
      `/api/v1/admin/users/${ids.alice}/security`,
      "/api/v1/admin/collections/books/indexes",
      "/api/v1/admin/collections/books/stats",
      "/api/v1/admin/collections/books/fts",
    ];
    for (const path of adminReads) {
      const [a, b] = [await admin(sqlite, "GET", path), await admin(pg, "GET", path)];
      expect({ path, ...b }).toEqual({ path, ...a });
      expect({ path, status: a.status }).toEqual({ path, status: 200 });
    }
    // Then (in the same test: these writes change what the reads above see) sessions, 2FA and
    // API keys made before the copy work on PostgreSQL as on SQLite.
    for (const srv of [sqlite, pg]) {
      // An access token and a refresh token issued by the SQLite server before the copy.
      const me = await call(srv, "GET", "/api/v1/auth/me", { token: before.access });
      expect(me.status).toBe(200);
      expect(me.body.email).toBe("bob@example.com");
      const refreshed = await call(srv, "POST", "/api/v1/auth/refresh", { body: { refresh_token: before.refresh } });
      expect(refreshed.status).toBe(200);
      // Password, then the TOTP code (the next step: the enabling code's step is used up).
      const login = await call(srv, "POST", "/api/v1/auth/login", { body: { email: "alice@example.com", password: "alice-password-1" } });
      expect(login.status).toBe(200);
      expect(login.body.totp_required).toBe(true);
      const verified = await call(srv, "POST", "/api/v1/auth/2fa/verify", { body: { totp_token: login.body.totp_token, code: totp.generate({ timestamp: Date.now() + 30_000 }) } });
      expect(verified.status).toBe(200);
      expect(verified.body.user.id).toBe(ids.alice);
      const me2 = await call(srv, "GET", "/api/v1/auth/me", { token: verified.body.access_token });
      expect(me2.body.email).toBe("alice@example.com");
    }
    const notes = (srv: ServerProcess) => call(srv, "GET", "/api/v1/notes?sort=text", { headers: { "x-api-key": apiKey } });
    const [a, b] = [await notes(sqlite), await notes(pg)];
    expect(b).toEqual(a);
    expect(a.status).toBe(200);
    expect(a.body.items.map((n: { text: string }) => n.text)).toEqual(["a1", "a2", "a3"]);
  });

  test("a target that is not empty is refused and left as it was", async () => {
    const again = await runCli(bin, ["--data", dir, "db", "copy", "--to", target], { env: SQLITE });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("the target database is not empty");
    // A database holding tables of its own is refused before anything is made in it.
    const other = await createTestDatabase();
    const sql = new SQL({ url: other, max: 1 });
    try {
      await sql.unsafe("CREATE TABLE inventory (id int); INSERT INTO inventory VALUES (1)").simple();
      const r = await runCli(bin, ["--data", dir, "db", "copy", "--to", other, "--json"], { env: SQLITE });
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stderr)).toEqual({ error: expect.stringContaining('it has a table "inventory"'), code: "conflict" });
      const tables = await sql.unsafe("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
      expect(tables.map((t: { table_name: string }) => t.table_name)).toEqual(["inventory"]);
    } finally {
      await sql.close();
    }
  });

  test("a malformed URL is a usage error and an unreachable server exit 1; neither repeats the password", async () => {
    const bad = await runCli(bin, ["--data", dir, "db", "copy", "--to", "mysql://u:pw-secret-1@127.0.0.1/db"], { env: SQLITE });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("postgres://");
    expect(bad.stderr).not.toContain("pw-secret-1");
    const down = await runCli(bin, ["--data", dir, "db", "copy", "--to", "postgres://u:pw-secret-1@127.0.0.1:1/baas"], { env: SQLITE });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("cannot use the PostgreSQL database at 127.0.0.1:1/baas");
    expect(down.stderr).not.toContain("pw-secret-1");
    const missing = await runCli(bin, ["--data", `${dir}-missing`, "db", "copy", "--to", target], { env: SQLITE });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no baas database");
    const noTo = await runCli(bin, ["--data", dir, "db", "copy"], { env: SQLITE });
    expect(noTo.code).toBe(2);
  });
});
