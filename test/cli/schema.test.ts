import { afterEach, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli, runOnTty, tempDataDir, type CliResult } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// `baas schema export|apply` and `baas fields …` (CONTRACT §13) as the compiled binary runs them: on a fresh
// data directory, and on a running server, through its data directory and through its admin API (--url).

setDefaultTimeout(90_000);

let bin: string;
let dir: string;
const cli = (args: string[], opts: { env?: Record<string, string> } = {}): Promise<CliResult> => runCli(bin, ["--data", dir, ...args], opts);

beforeAll(async () => {
  bin = await buildBinary();
});
beforeEach(() => {
  dir = tempDataDir();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const SCHEMA = {
  collections: [
    {
      name: "posts",
      rules: { read: "public", create: "public" },
      fields: [
        { name: "title", type: "text" },
        { name: "views", type: "number" },
      ],
      indexes: [{ fields: ["views"] }],
      fts: { enabled: true },
    },
    { name: "tags", fields: [{ name: "label", type: "text" }] },
  ],
  relations: [{ from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" }],
};

/** Writes a schema file in the data directory; its path. */
function schemaFile(schema: unknown, name = "schema.json"): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(schema, null, 2));
  return file;
}

describe("baas schema", () => {
  test("apply makes a fresh data directory match the file (plan printed); again it changes nothing; export --json gives the file back", async () => {
    const file = schemaFile(SCHEMA);
    const first = await cli(["schema", "apply", file, "--yes"]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("create_collection  posts");
    expect(first.stdout).toContain("applied 5 changes");
    const again = await cli(["schema", "apply", file, "--yes", "--json"]);
    expect({ code: again.code, body: again.json() }).toEqual({ code: 0, body: { changes: [], applied: true } });
    const exported = await cli(["schema", "export", "--json"]);
    expect(exported.code).toBe(0);
    const schema = exported.json();
    expect(schema.collections.map((c: any) => [c.name, c.fields])).toEqual([
      ["posts", SCHEMA.collections[0]!.fields],
      ["tags", SCHEMA.collections[1]!.fields],
    ]);
    const round = await cli(["schema", "apply", schemaFile(schema, "exported.json"), "--yes", "--prune", "--json"]);
    expect(round.json()).toEqual({ changes: [], applied: true });
    // Without --json it prints the same JSON: the file apply takes.
    expect(JSON.parse((await cli(["schema", "export"])).stdout)).toEqual(schema);
  });

  test("--dry-run prints the plan and changes nothing; without --yes and a terminal it applies; a bad file is exit 2; a failing change exit 1 and nothing applied", async () => {
    const file = schemaFile(SCHEMA);
    const dry = await cli(["schema", "apply", file, "--dry-run", "--json"]);
    expect(dry.code).toBe(0);
    expect(dry.json().applied).toBe(false);
    expect(dry.json().changes).toHaveLength(5);
    expect((await cli(["schema", "export", "--json"])).json().collections).toEqual([]);

    expect((await cli(["schema", "apply", join(dir, "missing.json"), "--yes"])).code).toBe(2);
    writeFileSync(join(dir, "bad.json"), "{ nope");
    expect((await cli(["schema", "apply", join(dir, "bad.json"), "--yes"])).code).toBe(2);
    const invalid = await cli(["schema", "apply", schemaFile({ collections: [{ name: "x", fields: [{ name: "a", type: "date" }] }] }, "invalid.json"), "--yes", "--json"]);
    expect({ code: invalid.code, err: JSON.parse(invalid.stderr).code }).toEqual({ code: 1, err: "bad_request" });

    // No terminal to ask on (a script, CI): without --yes the command is its own confirmation.
    const scripted = await cli(["schema", "apply", file]);
    expect(scripted.code).toBe(0);
    expect(scripted.stdout).toContain("applied 5 changes");
    expect((await cli(["fields", "add", "posts", "code", "text"])).code).toBe(0);
    const bad = structuredClone(SCHEMA) as any;
    bad.collections[0].fields.push({ name: "code", type: "number" });
    bad.collections.push({ name: "later", fields: [] });
    await runCliInsert();
    const failed = await cli(["schema", "apply", schemaFile(bad, "bad-types.json"), "--yes", "--json"]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stderr)).toMatchObject({ code: "conflict", count: 1, change: { action: "retype_field", target: "posts.code" } });
    expect((await cli(["schema", "export", "--json"])).json().collections.map((c: any) => c.name)).toEqual(["posts", "tags"]);
  });
});

/** Writes a record whose code is not a number, through a running server on the data directory (a plain insert). */
async function runCliInsert(): Promise<void> {
  const server = await spawnServer({ cmd: [bin], dir });
  try {
    const res = await fetch(`${server.url}/api/v1/posts`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "t", code: "abc" }) });
    expect(res.status).toBe(201);
  } finally {
    await server.stop();
  }
}

describe("baas fields", () => {
  test("add, rename, retype and drop print the collection (--json: its object); off a terminal retype and drop need no --yes", async () => {
    expect((await cli(["collections", "create", "items"])).code).toBe(0);
    const added = await cli(["fields", "add", "items", "qty", "text", "--json"]);
    expect(added.json().fields).toEqual([{ name: "qty", type: "text" }]);
    const renamed = await cli(["fields", "rename", "items", "qty", "quantity"]);
    expect(renamed.stdout).toContain("fields:      quantity:text");
    const retyped = await cli(["fields", "retype", "items", "quantity", "number", "--json"]);
    expect(retyped.json().fields).toEqual([{ name: "quantity", type: "number" }]);
    expect((await cli(["fields", "retype", "items", "quantity", "text", "--yes", "--json"])).json().fields).toEqual([{ name: "quantity", type: "text" }]);
    const dropped = await cli(["fields", "drop", "items", "quantity", "--json"]);
    expect(dropped.json().fields).toEqual([]);
    const missing = await cli(["fields", "rename", "items", "nope", "x", "--json"]);
    expect({ code: missing.code, err: JSON.parse(missing.stderr).code }).toEqual({ code: 1, err: "not_found" });
  });

  test("add declares a file field with --max-size, --mime and --max-count; a bad value exits 2, one the API refuses 1", async () => {
    expect((await cli(["collections", "create", "albums"])).code).toBe(0);
    const cover = await cli(["fields", "add", "albums", "cover", "file", "--max-size", "2097152", "--mime", "image/png, image/jpeg", "--json"]);
    expect(cover.code).toBe(0);
    expect(cover.json().fields).toEqual([{ name: "cover", type: "file", max_size: 2097152, mime: ["image/png", "image/jpeg"], max_count: 1 }]);
    const photos = await cli(["fields", "add", "albums", "photos", "file", "--max-count", "5", "--json"]);
    expect(photos.json().fields[1]).toEqual({ name: "photos", type: "file", max_size: 5 * 1024 * 1024, mime: [], max_count: 5 });
    expect((await cli(["fields", "add", "albums", "x", "file", "--max-size", "big"])).code).toBe(2);
    const huge = await cli(["fields", "add", "albums", "y", "file", "--max-size", String(2 * 1024 ** 3), "--json"]);
    expect({ code: huge.code, err: JSON.parse(huge.stderr).code }).toEqual({ code: 1, err: "bad_request" });
  });
});

describe("on a running server", () => {
  let server: ServerProcess;
  afterEach(async () => {
    await server?.stop();
  });

  test("a schema applied to its data directory, or through its admin API with --url, holds at the server's next request", async () => {
    server = await spawnServer({ cmd: [bin], dir });
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    expect((await cli(["schema", "apply", schemaFile(SCHEMA), "--yes"])).code).toBe(0);
    expect((await api("GET", "/posts?filter=views:gt:1&sort=-views")).body).toMatchObject({ items: [], total: 0 });
    expect((await api("POST", "/posts", { title: "hello", views: 3 })).status).toBe(201);

    const next = structuredClone(SCHEMA) as any;
    next.collections[0].fields = [{ name: "headline", type: "text", renamed_from: "title" }, { name: "views", type: "text" }];
    const file = schemaFile(next, "next.json");
    const noSecret = await runCli(bin, ["schema", "apply", file, "--yes", "--url", server.url]);
    expect(noSecret.code).toBe(2);
    const wrong = await runCli(bin, ["schema", "apply", file, "--yes", "--url", server.url, "--json"], { env: { ADMIN_SECRET: "not-the-secret-0123456789" } });
    expect({ code: wrong.code, err: JSON.parse(wrong.stderr).code }).toEqual({ code: 1, err: "unauthorized" });
    const remote = await runCli(bin, ["schema", "apply", file, "--yes", "--url", server.url, "--json"], { env: { ADMIN_SECRET } });
    expect(remote.code).toBe(0);
    expect(remote.json().changes.map((c: any) => c.action)).toEqual(["rename_field", "retype_field"]);
    expect((await api("GET", "/posts?filter=headline:eq:hello")).body.items[0]).toMatchObject({ headline: "hello", views: "3" });
    const fields = await runCli(bin, ["fields", "add", "posts", "summary", "text", "--url", server.url, "--json"], { env: { ADMIN_SECRET, DATA_DIR: join(dir, "elsewhere") } });
    expect(fields.json().fields.map((f: any) => f.name)).toEqual(["headline", "views", "summary"]);
    const exported = await runCli(bin, ["schema", "export", "--json"], { env: { ADMIN_SECRET, BAAS_URL: server.url } });
    expect(exported.json().collections[0].fields.map((f: any) => f.name)).toEqual(["headline", "views", "summary"]);
  });
});

// On a terminal, apply shows the plan and asks. `script` gives the binary a pseudo-terminal.
const scriptBin = Bun.which("script");
describe.skipIf(!scriptBin)("on a terminal", () => {
  const onTty = (args: string[], prompt: string, input: string) => runOnTty(scriptBin!, bin, dir, args, [[prompt, input]]);

  test("schema apply prints the plan and asks: no changes nothing, yes applies", async () => {
    const file = schemaFile(SCHEMA);
    const no = await onTty(["schema", "apply", file], "Apply these 5 changes", "n");
    expect(no.out).toContain("create_collection");
    expect(no.code).toBe(1);
    expect((await cli(["schema", "export", "--json"])).json().collections).toEqual([]);
    const yes = await onTty(["schema", "apply", file], "Apply these 5 changes", "y");
    expect(yes.code).toBe(0);
    expect(yes.out).toContain("applied 5 changes");
    expect((await cli(["schema", "export", "--json"])).json().collections).toHaveLength(2);
  });
});

