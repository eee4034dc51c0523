import { afterEach, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { ADMIN } from "../../src/principal.ts";
import { closeContext } from "../../src/app-context.ts";
import { createRecord } from "../../src/records/create.ts";
import { schemaNameTaken } from "../../src/collections/ddl.ts";
import { buildBinary, openDataDir, runCli, runOnTty, tempDataDir, withDataDir, type CliResult } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";

setDefaultTimeout(60_000);

let bin: string;
let dir: string;
const cli = (args: string[], opts: { stdin?: string } = {}): Promise<CliResult> => runCli(bin, ["--data", dir, ...args], opts);

/** Runs a set-up command that must succeed. */
const must = async (args: string[], opts: { stdin?: string } = {}): Promise<CliResult> => {
  const r = await cli(args, opts);
  if (r.code !== 0) throw new Error(`baas ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
};

// The binary is built once; every test runs it on its own fresh data directory and sets up what it needs.
beforeAll(async () => {
  bin = await buildBinary();
});
beforeEach(() => {
  dir = tempDataDir();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("program", () => {
  test("--version prints the package version and exits 0", async () => {
    const r = await runCli(bin, ["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  test("an unknown command exits 2 with a message on stderr", async () => {
    const r = await cli(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'frobnicate'");
    expect(r.stdout).toBe("");
  });

  test("a missing argument exits 2", async () => {
    const r = await cli(["collections", "show"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("missing required argument 'name'");
  });

  test("an unknown option exits 2", async () => {
    const r = await cli(["collections", "list", "--bogus"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown option '--bogus'");
  });

  test("with --json, a usage error the argument parser finds is JSON on stderr too: { error, code: usage }", async () => {
    for (const [args, error] of [
      [["frobnicate", "--json"], "unknown command 'frobnicate'"],
      [["collections", "show", "--json"], "missing required argument 'name'"],
      [["collections", "list", "--bogus", "--json"], "unknown option '--bogus'"],
      [["relations", "create", "posts.x", "posts", "--type", "bogus", "--json"], "option '--type <type>' argument 'bogus' is invalid. Allowed choices are one, many, many_via."],
    ] as const) {
      const r = await cli([...args]);
      expect({ args, code: r.code, stderr: JSON.parse(r.stderr), stdout: r.stdout }).toEqual({ args, code: 2, stderr: { error, code: "usage" }, stdout: "" });
    }
  });

  test("a group without its subcommand exits 2", async () => {
    expect((await cli(["collections"])).code).toBe(2);
  });

  test("help <command> <sub> shows that command's usage with examples and exits 0", async () => {
    const r = await runCli(bin, ["help", "collections", "create"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: baas collections create [options] <name>");
    expect(r.stdout).toContain("Example");
    const top = await runCli(bin, ["help", "users"]);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain("Examples:");
  });

  test("help for an unknown command exits 2", async () => {
    const r = await runCli(bin, ["help", "nope"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'nope'");
  });

  test("DATA_DIR from the environment selects the data directory", async () => {
    const other = tempDataDir();
    try {
      const r = await runCli(bin, ["collections", "create", "viaenv", "--json"], { env: { DATA_DIR: other } });
      expect(r.code).toBe(0);
      // The SQLite file is made in the directory; on PostgreSQL the data lives in the database instead.
      if (!onPostgres) expect(existsSync(join(other, "baas.db"))).toBe(true);
      const list = await runCli(bin, ["--data", other, "collections", "list", "--json"]);
      expect(list.json().items.map((c: { name: string }) => c.name)).toEqual(["viaenv"]);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

/** posts (public read, editor update, no delete) and notes (default rules). */
async function seedCollections() {
  await must(["collections", "create", "posts", "--read", "public", "--update", "role:editor", "--delete", "disabled"]);
  await must(["collections", "create", "notes"]);
}

describe("collections", () => {
  test("create --json prints the collection object with the given and default rules", async () => {
    const r = await cli(["collections", "create", "drafts", "--read", "public", "--update", "role:editor", "--delete", "disabled", "--json"]);
    expect(r.code).toBe(0);
    const c = r.json();
    expect(c).toMatchObject({
      name: "drafts",
      rules: { read: "public", create: "authenticated", update: { role: "editor" }, delete: "disabled" },
      field_rules: [],
      fields: [],
      indexes: [],
      fts: { enabled: false, fields: [] },
    });
    expect(typeof c.created_at).toBe("number");
  });

  test("create without --json prints a readable summary", async () => {
    const r = await cli(["collections", "create", "notes"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("name:");
    expect(r.stdout).toContain("update=owner");
  });

  test("a taken name exits 1 with the service's message", async () => {
    await seedCollections();
    const r = await cli(["collections", "create", "posts"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: collection "posts" already exists\n');
  });

  test("with --json an error is the admin API's error body on stderr", async () => {
    await seedCollections();
    const r = await cli(["collections", "create", "posts", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr)).toEqual({ error: 'collection "posts" already exists', code: "conflict" });
    expect(r.stdout).toBe("");
  });

  test("an invalid name exits 1", async () => {
    const r = await cli(["collections", "create", "auth"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("invalid collection name");
  });

  test("any other rule value is an expression, checked by the service: a bad one exits 1 naming the token", async () => {
    for (const [bad, says] of [
      ["everyone", "unknown field 'everyone' at 1"],
      ["role:", "unexpected character ':' at 5"],
      ["Public", "unknown field 'Public' at 1"],
    ]) {
      const r = await cli(["collections", "create", "other", "--read", bad!]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`invalid read rule: ${says}`);
    }
    const empty = await cli(["collections", "create", "other", "--read", " "]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("expected public, authenticated, owner, disabled, role:<name> or an expression");
    expect((await cli(["collections", "show", "other"])).code).toBe(1);
  });

  test("an expression rule is set as given and shown as given", async () => {
    const rule = "status = 'published' || _owner_id = @auth.id";
    const made = await cli(["collections", "create", "other", "--read", rule, "--json"]);
    expect(made.code).toBe(1);
    expect(made.stderr).toContain("invalid read rule: unknown field 'status' at 1");
    expect((await cli(["collections", "create", "other", "--read", "_owner_id = @auth.id || @auth.roles ?= 'editor'", "--json"])).json().rules.read).toBe(
      "_owner_id = @auth.id || @auth.roles ?= 'editor'",
    );
    const r = await cli(["collections", "rules", "other", "--update", "@auth.verified && _owner_id = @auth.id", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().rules.update).toBe("@auth.verified && _owner_id = @auth.id");
    const shown = await cli(["collections", "show", "other"]);
    expect(shown.stdout).toContain("update=@auth.verified && _owner_id = @auth.id");
  });

  test("a role name the service rejects exits 1", async () => {
    const r = await cli(["collections", "create", "other", "--read", "role:no spaces"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("invalid read rule");
  });

  test("list --json prints { items } sorted by name", async () => {
    await seedCollections();
    const r = await cli(["collections", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().items.map((c: { name: string }) => c.name)).toEqual(["notes", "posts"]);
  });

  test("list without --json prints a table", async () => {
    await seedCollections();
    const r = await cli(["collections", "list"]);
    expect(r.stdout.split("\n")[0]).toMatch(/^NAME\s+FIELDS\s+READ/);
    expect(r.stdout).toContain("role:editor");
  });

  test("show --json prints the collection object; an unknown one exits 1", async () => {
    await seedCollections();
    const r = await cli(["collections", "show", "posts", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().name).toBe("posts");
    const missing = await cli(["collections", "show", "ghosts"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: collection "ghosts" not found\n');
  });

  test("rules replaces the given rules and keeps the others", async () => {
    await seedCollections();
    const r = await cli(["collections", "rules", "posts", "--create", "role:writer", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().rules).toEqual({ read: "public", create: { role: "writer" }, update: { role: "editor" }, delete: "disabled" });
  });

  test("rules --field-rules takes inline JSON or @file and replaces the list", async () => {
    await seedCollections();
    const inline = await cli(["collections", "rules", "posts", "--field-rules", '[{"field":"title","required":true,"min":3}]', "--json"]);
    expect(inline.code).toBe(0);
    expect(inline.json().field_rules).toEqual([{ field: "title", required: true, min: 3 }]);
    const file = join(dir, "rules.json");
    writeFileSync(file, JSON.stringify([{ field: "status", enum: ["draft", "published"] }]));
    const fromFile = await cli(["collections", "rules", "posts", "--field-rules", `@${file}`, "--json"]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.json().field_rules).toEqual([{ field: "status", enum: ["draft", "published"] }]);
  });

  test("rules with malformed JSON or a missing @file exits 2; a rule the service rejects exits 1", async () => {
    await seedCollections();
    const bad = await cli(["collections", "rules", "posts", "--field-rules", "[{"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("not valid JSON");
    const nofile = await cli(["collections", "rules", "posts", "--field-rules", "@/nonexistent/rules.json"]);
    expect(nofile.code).toBe(2);
    const rejected = await cli(["collections", "rules", "posts", "--field-rules", '[{"field":"title","colour":"red"}]']);
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toContain('unknown key "colour"');
  });

  test("rules without any rule option exits 2", async () => {
    await seedCollections();
    const r = await cli(["collections", "rules", "posts"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("give at least one of");
  });

  test("delete without --yes and without a terminal refuses and keeps the collection", async () => {
    await seedCollections();
    const r = await cli(["collections", "delete", "notes"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("without --yes");
    expect((await cli(["collections", "show", "notes"])).code).toBe(0);
  });

  test("delete --yes --json prints { ok: true } and drops the table", async () => {
    await seedCollections();
    const r = await cli(["collections", "delete", "notes", "--yes", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ ok: true });
    expect((await cli(["collections", "show", "notes"])).code).toBe(1);
    expect(await withDataDir(dir, (ctx) => schemaNameTaken(ctx.db, "notes"))).toBe(false);
  });

  test("delete of an unknown collection exits 1", async () => {
    const r = await cli(["collections", "delete", "ghosts", "--yes"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not found");
  });
});

describe("stats", () => {
  test("stats --json prints { row_count, last_write }", async () => {
    await must(["collections", "create", "posts"]);
    const r = await cli(["stats", "posts", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ row_count: 0, last_write: null });
  });

  test("stats of an unknown collection exits 1", async () => {
    expect((await cli(["stats", "ghosts"])).code).toBe(1);
  });
});

describe("settings", () => {
  test("list --json prints every setting with its default", async () => {
    const r = await cli(["settings", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ app_name: "baas", access_token_ttl_seconds: 900, registration_open: true, require_verified_email: false });
  });

  test("set reads the value by the setting's type and prints the settings object", async () => {
    const r = await cli(["settings", "set", "registration_open", "false", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().registration_open).toBe(false);
    expect((await cli(["settings", "set", "require_verified_email", "true", "--json"])).json().require_verified_email).toBe(true);
    const ttl = await cli(["settings", "set", "access_token_ttl_seconds", "600", "--json"]);
    expect(ttl.json().access_token_ttl_seconds).toBe(600);
    const name = await cli(["settings", "set", "app_name", "My App"]);
    expect(name.code).toBe(0);
    expect(name.stdout.trim()).toBe("app_name = My App");
  });

  test("get prints the value, or { key: value } with --json", async () => {
    await must(["settings", "set", "registration_open", "false"]);
    await must(["settings", "set", "access_token_ttl_seconds", "600"]);
    expect((await cli(["settings", "get", "registration_open"])).stdout.trim()).toBe("false");
    const r = await cli(["settings", "get", "access_token_ttl_seconds", "--json"]);
    expect(r.json()).toEqual({ access_token_ttl_seconds: 600 });
  });

  test("get shows the read-only OAuth redirect addresses; set refuses them", async () => {
    const r = await cli(["settings", "get", "oauth_redirect_urls", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().oauth_redirect_urls.oidc).toMatch(/\/api\/v1\/auth\/oauth\/oidc\/callback$/);
    expect((await cli(["settings", "set", "oauth_redirect_urls", "x"])).code).toBe(1);
    expect((await cli(["settings", "get", "constructor"])).code).toBe(1);
  });

  test("secrets read back masked", async () => {
    await cli(["settings", "set", "oauth_oidc_client_secret", "hunter2"]);
    const r = await cli(["settings", "get", "oauth_oidc_client_secret", "--json"]);
    expect(r.json()).toEqual({ oauth_oidc_client_secret: "********" });
  });

  test("an unknown key or a wrongly typed value exits 1 and changes nothing", async () => {
    await must(["settings", "set", "access_token_ttl_seconds", "600"]);
    const unknown = await cli(["settings", "set", "colour", "red"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('error: unknown setting "colour"\n');
    // A name of an Object.prototype member is no setting either.
    const proto = await cli(["settings", "set", "constructor", "x"]);
    expect([proto.code, proto.stderr]).toEqual([1, 'error: unknown setting "constructor"\n']);
    const typed = await cli(["settings", "set", "registration_open", "maybe"]);
    expect(typed.code).toBe(1);
    expect(typed.stderr).toContain("must be true or false");
    const range = await cli(["settings", "set", "access_token_ttl_seconds", "0"]);
    expect(range.code).toBe(1);
    expect((await cli(["settings", "get", "access_token_ttl_seconds"])).stdout.trim()).toBe("600");
    expect((await cli(["settings", "get", "colour"])).code).toBe(1);
  });
});

describe("admin and backup", () => {
  test("rotate-secret prints only the new secret on stdout, and --json prints { secret }", async () => {
    const r = await cli(["admin", "rotate-secret"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^baas_admin_[A-Za-z0-9_-]{20,}$/);
    const j = await cli(["admin", "rotate-secret", "--json"]);
    expect(j.json().secret).toMatch(/^baas_admin_/);
    expect(j.json().secret).not.toBe(r.stdout.trim());
  });

  // A backup is a copy of the SQLite file; on PostgreSQL it is refused (test/cli/backup-postgres.test.ts).
  test.skipIf(onPostgres)("backup writes a consistent SQLite copy and --json prints { ok, file, bytes }", async () => {
    await must(["collections", "create", "posts"]);
    const file = join(dir, "copy.db");
    const r = await cli(["backup", file, "--json"]);
    expect(r.code).toBe(0);
    const body = r.json();
    expect(body).toMatchObject({ ok: true, file });
    expect(body.bytes).toBeGreaterThan(0);
    const copy = new Database(file, { readonly: true });
    expect(copy.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    expect(copy.query("SELECT name FROM _collections").all()).toEqual([{ name: "posts" }]);
    copy.close();
    // The files' folder is there beside it even with no file stored.
    expect({ files: body.files, dir: readdirSync(`${file}.storage`) }).toEqual({ files: 0, dir: [] });
  });

  // A backup is a copy of the SQLite file; on PostgreSQL it is refused (test/cli/backup-postgres.test.ts).
  test.skipIf(onPostgres)("backup refuses to overwrite an existing file unless --force", async () => {
    await must(["backup", join(dir, "copy.db")]);
    const file = join(dir, "copy.db");
    const r = await cli(["backup", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("already exists");
    const forced = await cli(["backup", file, "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("backup written");
  });

  // A backup is a copy of the SQLite file; on PostgreSQL it is refused (test/cli/backup-postgres.test.ts).
  test.skipIf(onPostgres)("backup into a missing directory exits 1", async () => {
    const r = await cli(["backup", join(dir, "no/such/dir/copy.db")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("does not exist");
  });
});

describe("users", () => {
  let adaId = "";
  /** ada, made without a password (no terminal, no --password-stdin) to keep the set-up quick. */
  const createAda = async () => {
    adaId = (await must(["users", "create", "ada@example.com", "--json"])).json().id;
  };

  test("create --password-stdin --role --verified --json prints the user object", async () => {
    const r = await cli(["users", "create", " Ada@Example.com ", "--password-stdin", "--role", "editor", "--role", "admin", "--verified", "--json"], {
      stdin: "correct horse battery\n",
    });
    expect(r.code).toBe(0);
    const u = r.json();
    expect(u).toMatchObject({ email: "ada@example.com", is_verified: true, roles: ["editor", "admin"], metadata: {} });
    expect(Object.keys(u).sort()).toEqual(["created_at", "email", "id", "is_verified", "metadata", "roles"]);
    adaId = u.id;
    const row = (await withDataDir(dir, (ctx) => ctx.db.get<{ password_hash: string }>("SELECT password_hash FROM _users WHERE id = ?", [adaId])))!;
    expect(row.password_hash.startsWith("$argon2id$")).toBe(true);
    expect(await Bun.password.verify("correct horse battery", row.password_hash)).toBe(true);
  });

  test("create without a password and without a terminal makes a user with no password", async () => {
    const r = await cli(["users", "create", "bob@example.com", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ email: "bob@example.com", is_verified: false, roles: [] });
  });

  test("emails are NFC-normalised: a decomposed address is stored composed and found in either form; invisible characters exit 1", async () => {
    const made = await cli(["users", "create", "JOSE\u0301@example.com", "--json"]);
    expect([made.code, made.json().email]).toEqual([0, "jos\u00e9@example.com"]);
    expect((await cli(["users", "show", "jose\u0301@example.com", "--json"])).json().id).toBe(made.json().id);
    expect((await cli(["users", "create", "jos\u00e9@example.com"])).code).toBe(1);
    const hidden = await cli(["users", "create", "ada\u200b@example.com"]);
    expect([hidden.code, hidden.stderr]).toEqual([1, expect.stringContaining("must be a valid email address")]);
  });

  test("create exits 1 for a taken email, a bad email or a short password", async () => {
    await createAda();
    const taken = await cli(["users", "create", "ada@example.com"]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe("error: a user with this email already exists\n");
    const email = await cli(["users", "create", "not-an-email"]);
    expect(email.code).toBe(1);
    expect(email.stderr).toContain('"email"');
    const short = await cli(["users", "create", "carol@example.com", "--password-stdin", "--json"], { stdin: "short" });
    expect(short.code).toBe(1);
    expect(JSON.parse(short.stderr)).toEqual({ errors: [{ field: "password", rule: "min", message: '"password" must be at least 8 characters.' }] });
  });

  test("list --json prints { items, total }, newest first, and --search filters on the email", async () => {
    await createAda();
    await must(["users", "create", "bob@example.com"]);
    const all = await cli(["users", "list", "--json"]);
    expect(all.code).toBe(0);
    expect(all.json().total).toBe(2);
    expect(all.json().items.map((u: { email: string }) => u.email)).toEqual(["bob@example.com", "ada@example.com"]);
    const some = (await cli(["users", "list", "--search", "ADA", "--json"])).json();
    expect(some).toEqual({ items: [expect.objectContaining({ email: "ada@example.com" })], total: 1 });
    // A bad option value is the command line's mistake (exit 2).
    expect((await cli(["users", "list", "--limit", "0"])).code).toBe(2);
  });

  test("show finds a user by email or by id; an unknown one exits 1", async () => {
    await createAda();
    expect((await cli(["users", "show", "ada@example.com", "--json"])).json().id).toBe(adaId);
    expect((await cli(["users", "show", adaId, "--json"])).json().email).toBe("ada@example.com");
    const missing = await cli(["users", "show", "nobody@example.com"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("error: user not found\n");
  });

  test("roles replaces the roles; a bad role name exits 1", async () => {
    await createAda();
    const r = await cli(["users", "roles", "ada@example.com", "viewer", "viewer", "ops", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().roles).toEqual(["viewer", "ops"]);
    expect((await cli(["users", "roles", "ada@example.com", "bad role"])).code).toBe(1);
    expect((await cli(["users", "roles", "ada@example.com"])).code).toBe(2);
  });

  test("metadata replaces the metadata; a non-object, malformed JSON or too deep metadata is refused", async () => {
    await createAda();
    const r = await cli(["users", "metadata", adaId, '{"plan":"pro","a":{"b":{"c":1}}}', "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().metadata).toEqual({ plan: "pro", a: { b: { c: 1 } } });
    expect((await cli(["users", "metadata", adaId, "[1,2]"])).code).toBe(1);
    expect((await cli(["users", "metadata", adaId, '{"a":{"b":{"c":{"d":1}}}}'])).code).toBe(1);
    expect((await cli(["users", "metadata", adaId, "{oops"])).code).toBe(2);
  });

  test("revoke-sessions --json prints { ok, sessions_revoked }", async () => {
    await createAda();
    const r = await cli(["users", "revoke-sessions", "ada@example.com", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ ok: true, sessions_revoked: 0 });
  });

  test("unlock clears a lockout and prints the user", async () => {
    await createAda();
    await withDataDir(dir, (ctx) =>
      ctx.db.run("INSERT INTO _login_attempts (email, attempts, last_at, locked_until) VALUES ('ada@example.com', 10, ?, ?)", [Date.now(), Date.now() + 60_000]),
    );
    const r = await cli(["users", "unlock", "ada@example.com", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().email).toBe("ada@example.com");
    expect(await withDataDir(dir, (ctx) => ctx.db.get("SELECT 1 AS one FROM _login_attempts WHERE email = 'ada@example.com'"))).toBeNull();
  });

  test("delete refuses without --yes, and with --yes prints { ok, id }", async () => {
    await must(["users", "create", "bob@example.com"]);
    const refused = await cli(["users", "delete", "bob@example.com"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("without --yes");
    const bob = (await cli(["users", "show", "bob@example.com", "--json"])).json();
    const r = await cli(["users", "delete", "bob@example.com", "--yes", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ ok: true, id: bob.id });
    expect((await cli(["users", "show", "bob@example.com"])).code).toBe(1);
    expect((await cli(["users", "delete", "bob@example.com", "--yes"])).code).toBe(1);
  });
});

describe("relations", () => {
  let relId = "";
  /** authors and books, books.author (one, cascade) and authors.books (many). */
  const seedRelations = async () => {
    await must(["collections", "create", "authors"]);
    await must(["collections", "create", "books"]);
    relId = (await must(["relations", "create", "books.author", "authors", "--type", "one", "--on-delete", "cascade", "--json"])).json().id;
    await must(["relations", "create", "authors.books", "books", "--type", "many"]);
  };

  test("create --json prints the relation object", async () => {
    await cli(["collections", "create", "authors"]);
    await cli(["collections", "create", "books"]);
    const r = await cli(["relations", "create", "books.author", "authors", "--type", "one", "--on-delete", "cascade", "--json"]);
    expect(r.code).toBe(0);
    const rel = r.json();
    expect(rel).toMatchObject({ from_col: "books", from_field: "author", to_col: "authors", to_field: null, type: "one", on_delete: "cascade" });
    expect(typeof rel.id).toBe("string");
    expect(typeof rel.created_at).toBe("number");
    relId = rel.id;
    const many = await cli(["relations", "create", "authors.books", "books", "--type", "many", "--json"]);
    expect(many.code).toBe(0);
    expect(many.json()).toMatchObject({ type: "many", to_field: "author", on_delete: "restrict" });
  });

  test("list --json prints { items }", async () => {
    await seedRelations();
    const r = await cli(["relations", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json().items.map((x: { from_field: string }) => x.from_field).sort()).toEqual(["author", "books"]);
  });

  test("a missing --type, a bad choice or a first argument without a dot exits 2", async () => {
    await seedRelations();
    expect((await cli(["relations", "create", "books.editor", "authors"])).code).toBe(2);
    const bad = await cli(["relations", "create", "books.editor", "authors", "--type", "several"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("Allowed choices are one, many, many_via");
    expect((await cli(["relations", "create", "books.editor", "authors", "--type", "one", "--on-delete", "explode"])).code).toBe(2);
    const nodot = await cli(["relations", "create", "books", "authors", "--type", "one"]);
    expect(nodot.code).toBe(2);
    expect(nodot.stderr).toContain("<from_col>.<from_field>");
  });

  test("a field that already has a relation or an unknown collection exits 1", async () => {
    await seedRelations();
    const dup = await cli(["relations", "create", "books.author", "authors", "--type", "one"]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("already exists");
    expect((await cli(["relations", "create", "books.x", "ghosts", "--type", "one"])).code).toBe(1);
  });

  test("delete --json prints { ok: true }; an unknown id exits 1", async () => {
    await seedRelations();
    const r = await cli(["relations", "delete", relId, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ ok: true });
    const again = await cli(["relations", "delete", relId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("error: relation not found\n");
  });
});

describe("indexes and fts", () => {
  const createIndexes = async () => {
    await must(["indexes", "create", "articles", "slug", "--unique"]);
    await must(["indexes", "create", "articles", "views", "title", "--name", "by_views"]);
  };
  beforeEach(async () => {
    await cli(["collections", "create", "articles"]);
    const ctx = await openDataDir(dir);
    try {
      await createRecord(ctx, "articles", { slug: "a", title: "Hello world", views: 1 }, ADMIN);
      await createRecord(ctx, "articles", { slug: "b", title: "Goodbye moon", views: 1 }, ADMIN);
    } finally {
      await closeContext(ctx);
    }
  });

  test("indexes create --json prints { name, fields, unique }", async () => {
    const r = await cli(["indexes", "create", "articles", "slug", "--unique", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ name: "idx_articles_slug", fields: ["slug"], unique: true });
    const multi = await cli(["indexes", "create", "articles", "views", "title", "--name", "by_views", "--json"]);
    expect(multi.json()).toEqual({ name: "by_views", fields: ["views", "title"], unique: false });
  });

  test("indexes list --json prints { items }", async () => {
    await createIndexes();
    const r = await cli(["indexes", "list", "articles", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({
      items: [
        { name: "idx_articles_slug", fields: ["slug"], unique: true },
        { name: "by_views", fields: ["views", "title"], unique: false },
      ],
    });
  });

  test("indexes create exits 1 for an unknown field, duplicates under --unique or an unknown collection; 2 without fields", async () => {
    const unknown = await cli(["indexes", "create", "articles", "nope"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown field "nope"');
    const dup = await cli(["indexes", "create", "articles", "views", "--unique", "--json"]);
    expect(dup.code).toBe(1);
    expect(JSON.parse(dup.stderr).code).toBe("unique_violation");
    expect((await cli(["indexes", "create", "ghosts", "slug"])).code).toBe(1);
    expect((await cli(["indexes", "create", "articles"])).code).toBe(2);
  });

  test("indexes drop --json prints { ok: true }; an unknown index exits 1", async () => {
    await createIndexes();
    const r = await cli(["indexes", "drop", "articles", "by_views", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ ok: true });
    expect((await cli(["indexes", "drop", "articles", "by_views"])).code).toBe(1);
    expect((await cli(["indexes", "list", "articles", "--json"])).json().items).toHaveLength(1);
  });

  test("fts status, enable and disable print the admin API's bodies", async () => {
    expect((await cli(["fts", "status", "articles", "--json"])).json()).toEqual({ enabled: false, fields: [], indexed_records: 0, state: "disabled" });
    const on = await cli(["fts", "enable", "articles", "--json"]);
    expect(on.code).toBe(0);
    expect(on.json()).toEqual({ enabled: true, fields: ["slug", "title"], indexed_records: 2, state: "ready" });
    expect((await cli(["fts", "enable", "articles", "--json"])).json()).toEqual({ enabled: true, fields: ["slug", "title"], indexed_records: 2, state: "ready" });
    expect((await cli(["fts", "status", "articles", "--json"])).json().enabled).toBe(true);
    const off = await cli(["fts", "disable", "articles", "--json"]);
    expect(off.code).toBe(0);
    expect(off.json()).toEqual({ enabled: false });
    expect((await cli(["fts", "status", "articles"])).stdout).toContain("enabled:         false");
  });

  test("fts on an unknown collection exits 1, an unknown action 2", async () => {
    expect((await cli(["fts", "enable", "ghosts"])).code).toBe(1);
    expect((await cli(["fts", "rebuild", "articles"])).code).toBe(2);
    expect((await cli(["fts", "status"])).code).toBe(2);
  });
});

// On a terminal the CLI asks instead of refusing. `script` gives the binary a pseudo-terminal.
const scriptBin = Bun.which("script");
describe.skipIf(!scriptBin)("prompts on a terminal", () => {
  const onTty = (args: string[], steps: [waitFor: string, input: string][]) => runOnTty(scriptBin!, bin, dir, args, steps);

  test("collections delete asks to confirm; no keeps the collection, yes deletes it", async () => {
    await cli(["collections", "create", "ttyposts"]);
    const no = await onTty(["collections", "delete", "ttyposts"], [['Delete collection "ttyposts"', "n\r"]]);
    expect(no.out).toContain('Delete collection "ttyposts"');
    expect(no.code).toBe(1);
    expect((await cli(["collections", "show", "ttyposts"])).code).toBe(0);
    const yes = await onTty(["collections", "delete", "ttyposts"], [['Delete collection "ttyposts"', "y\r"]]);
    expect(yes.code).toBe(0);
    expect(yes.out).toContain("deleted collection ttyposts");
    expect((await cli(["collections", "show", "ttyposts"])).code).toBe(1);
  });

  test("users create asks for the password without echoing it", async () => {
    const r = await onTty(["users", "create", "tty@example.com"], [["Password for tty@example.com", "tty-password-9\r"]]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("Password for tty@example.com");
    expect(r.out).not.toContain("tty-password-9");
    const row = (await withDataDir(dir, (ctx) => ctx.db.get<{ password_hash: string }>("SELECT password_hash FROM _users WHERE email = 'tty@example.com'")))!;
    expect(await Bun.password.verify("tty-password-9", row.password_hash)).toBe(true);
  });
});
