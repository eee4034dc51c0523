import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadHooks } from "../../src/hooks/load.ts";
import { createTestApp } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { onPostgres } from "../helpers/engine.ts";

setDefaultTimeout(120_000);

const ROOT = resolve(import.meta.dir, "../..");
const EXPECTED = readFileSync(join(ROOT, "test/fixtures/types/blog.ts"), "utf8");
let bin: string;
let dir: string;
let work: string;

// A blog set up through the admin and data API: posts with text, number, boolean and json fields,
// a one relation to authors, a many_via relation to tags, and the many relation back from authors.
beforeAll(async () => {
  bin = await buildBinary();
  dir = tempDataDir();
  work = tempDataDir();
  const t = createTestApp({ dir });
  try {
    const ok = async (method: string, path: string, body: unknown, status: number) => {
      const res = await t.admin(method, path, body);
      if (res.status !== status) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
      return res.body;
    };
    for (const name of ["authors", "posts", "tags"]) await ok("POST", "/api/v1/admin/collections", { name }, 201);
    await ok("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "author", to_col: "authors", type: "one" }, 201);
    await ok("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "tags", to_col: "tags", type: "many_via" }, 201);
    await ok("POST", "/api/v1/admin/relations", { from_col: "authors", from_field: "posts", to_col: "posts", type: "many" }, 201);
    const author = await ok("POST", "/api/v1/authors", { name: "Ann" }, 201);
    const tag = await ok("POST", "/api/v1/tags", { label: "news" }, 201);
    await ok(
      "POST",
      "/api/v1/posts",
      { title: "Hello", views: 3, draft: false, meta: { lang: "en" }, author: author._id, tags: [tag._id] },
      201,
    );
  } finally {
    await t.close();
  }
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

describe("baas types", () => {
  test("prints the interfaces of every collection, exactly as the hand-checked file", async () => {
    const r = await runCli(bin, ["types", "--data", dir]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(EXPECTED);
  });

  test("the output compiles with tsc --strict and types the client's collection calls", async () => {
    const out = join(work, "baas-types.ts");
    const r = await runCli(bin, ["types", "--out", out, "--data", dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`wrote 3 interfaces to ${out}\n`);
    expect(readFileSync(out, "utf8")).toBe(EXPECTED);
    writeFileSync(
      join(work, "usage.ts"),
      `import { createClient } from ${JSON.stringify(join(ROOT, "client/src/index.js"))};
import type { Collections, Posts } from "./baas-types.js";

export async function use(): Promise<void> {
  const posts = createClient("http://localhost:8090").collection<Posts>("posts");
  const post = await posts.create({ title: "Hi", views: 1, draft: true, meta: { a: 1 }, author: "01A", tags: ["01T"] });
  const views: number | null = post.views;
  const draft: boolean | null = post.draft;
  const tags: string[] = post.tags;
  const author: string | null | undefined = post._expand?.author?.name;
  // @ts-expect-error embedded records carry no virtual relation fields
  void post._expand?.author?.posts;
  const page = await posts.list({ filter: { views: { gte: 2 }, draft: false }, sort: ["-views", "title:asc"], expand: ["author", "tags"] });
  const first: Posts | undefined = page.items[0];
  const byName: Collections["posts"] = post;
  // @ts-expect-error views holds numbers
  await posts.create({ views: "many" });
  // @ts-expect-error no such field to sort by
  await posts.list({ sort: "-nope" });
  void [views, draft, tags, author, first, byName];
}
`,
    );
    writeFileSync(
      join(work, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "bundler",
          lib: ["ES2022", "DOM", "DOM.Iterable"],
          types: [],
          skipLibCheck: true,
        },
        files: ["baas-types.ts", "usage.ts"],
      }),
    );
    const tsc = Bun.spawn([join(ROOT, "node_modules/.bin/tsc"), "--strict", "--noEmit", "-p", work], { cwd: work, stdout: "pipe", stderr: "pipe" });
    const [stdout, code] = await Promise.all([new Response(tsc.stdout).text(), tsc.exited]);
    expect(stdout).toBe("");
    expect(code).toBe(0);
  });

  test("--collection prints one collection; related ones it leaves out are typed as any record", async () => {
    const r = await runCli(bin, ["types", "--collection", "POSTS", "--json", "--data", dir]);
    expect(r.code).toBe(0);
    const body = r.json();
    expect(body.collections).toEqual(["posts"]);
    expect(body.types).toContain("export interface Posts {\n");
    expect(body.types).not.toContain("export interface Authors");
    expect(body.types).toContain("    author?: { _id: string; [field: string]: unknown } | null;\n");
    expect(body.types).toContain("export interface Collections {\n  posts: Posts;\n}\n");
  });

  test("an unknown collection exits 1 with the admin API's error", async () => {
    const r = await runCli(bin, ["types", "--collection", "nope", "--data", dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe('error: collection "nope" not found\n');
    const j = await runCli(bin, ["types", "--collection", "nope", "--json", "--data", dir]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stderr)).toEqual({ error: 'collection "nope" not found', code: "not_found" });
  });

  test("a missing data directory exits 1 and an unknown option exits 2", async () => {
    const missing = join(work, "no-such-dir");
    // On PostgreSQL the data lives in the database: a data directory is not needed there.
    if (!onPostgres) {
      const r = await runCli(bin, ["types", "--data", missing]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`error: no baas data directory at ${missing}\n`);
    }
    const u = await runCli(bin, ["types", "--colection", "posts", "--data", dir]);
    expect(u.code).toBe(2);
  });

  test("--hooks adds the types of hook files: a hook and routes written against them compile, wrong uses do not, and the file loads and runs", async () => {
    const hooks = join(work, "hooks");
    mkdirSync(hooks, { recursive: true });
    const r = await runCli(bin, ["types", "--hooks", "--out", join(hooks, "_types.ts"), "--data", dir]);
    expect(r.code).toBe(0);
    const types = readFileSync(join(hooks, "_types.ts"), "utf8");
    expect(types.startsWith(EXPECTED)).toBe(true);
    for (const name of ["Hook", "Route", "Tx", "HookEvent", "CommitEvent", "RouteRequest", "WriteData"]) expect(types).toMatch(new RegExp(`export (type|interface) ${name}\\b`));
    // A hook of posts and a route, typed by the generated file (as docs/API.md shows it).
    writeFileSync(
      join(hooks, "posts.ts"),
      `import type { Hook, Route } from "./_types.ts";

export default {
  collection: "posts",
  async beforeCreate({ data, tx }) {
    const author = data?.author ? await tx.get("authors", data.author) : null;
    if (data) data.title = \`\${data.title ?? ""} (\${author?.name ?? "nobody"})\`;
  },
  onCommit(event) {
    const views: number | null = event.record.views;
    void views;
  },
} satisfies Hook;

export const routes = [
  { method: "GET", path: "/posts/:id/views", handler: async ({ params, tx }) => {
      const post = await tx.get("posts", params.id);
      return { views: post?.views ?? 0 };
  } },
] satisfies Route[];
`,
    );
    writeFileSync(
      join(hooks, "_wrong.ts"),
      `import type { Hook, Route, Tx } from "./_types.ts";

export async function wrong(tx: Tx): Promise<void> {
  // @ts-expect-error no such collection
  await tx.get("nope", "01A");
  // @ts-expect-error views holds numbers
  await tx.update("posts", "01A", { views: "many" });
  const gone = await tx.delete("posts", "01A", { hard: true });
  const ok: true = gone.ok;
  const soft = await tx.delete("posts", "01A");
  const title: string | null = soft.title;
  await tx.update("posts", "01A", { "views+": 1 });
  void [ok, title];
}

// @ts-expect-error no such handler
export const misspelt = { collection: "posts", beforeCreated() {} } satisfies Hook;
// @ts-expect-error no such collection
export const unknown = { collection: "nope", beforeCreate() {} } satisfies Hook;
export const everyOne = { collection: "*", afterCreate(e) { void e.record?._id; } } satisfies Hook;
// @ts-expect-error not a method a route answers
export const badRoute = [{ method: "HEAD", path: "/x", handler: () => 1 }] satisfies Route[];
`,
    );
    writeFileSync(
      join(hooks, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "bundler",
          allowImportingTsExtensions: true,
          lib: ["ES2022", "DOM", "DOM.Iterable"],
          types: [],
          skipLibCheck: true,
        },
        files: ["_types.ts", "posts.ts", "_wrong.ts"],
      }),
    );
    const tsc = Bun.spawn([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", hooks], { cwd: hooks, stdout: "pipe", stderr: "pipe" });
    const [stdout, code] = await Promise.all([new Response(tsc.stdout).text(), tsc.exited]);
    expect(stdout).toBe("");
    expect(code).toBe(0);
    // The typed file is an ordinary hook file: it loads (the `_` files are not hooks) and runs.
    rmSync(join(hooks, "tsconfig.json"));
    const t = createTestApp({ dir, context: { hooks: await loadHooks(hooks) } });
    try {
      const ann = (await t.admin("GET", "/api/v1/authors")).body.items[0];
      const post = await t.admin("POST", "/api/v1/posts", { title: "Typed", views: 7, author: ann._id });
      expect(post.status).toBe(201);
      expect(post.body.title).toBe("Typed (Ann)");
      expect((await t.admin("GET", `/api/v1/fn/posts/${post.body._id}/views`)).body).toEqual({ views: 7 });
    } finally {
      await t.close();
    }
  });

  test("help shows the options with examples", async () => {
    const r = await runCli(bin, ["help", "types"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("--collection <name>");
    expect(r.stdout).toContain("--out <file>");
    expect(r.stdout).toContain("$ baas types --out src/baas-types.ts");
    expect(r.stdout).toContain("--hooks");
  });
});
