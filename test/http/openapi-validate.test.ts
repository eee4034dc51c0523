import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import openapiTS, { astToString } from "openapi-typescript";
import { ADMIN_SECRET, createTestApp } from "../helpers/app.ts";

// The document checked by tools that are not ours: @readme/openapi-parser validates it against the
// OpenAPI 3.1 schema (and resolves every $ref), openapi-typescript turns it into types that compile.

const t = createTestApp();
afterAll(() => t.close());

async function documentOf(path: string, token?: string): Promise<any> {
  const res = await t.req("GET", path, { token });
  expect(res.status).toBe(200);
  return res.body;
}

async function expectValid(doc: unknown): Promise<void> {
  const result = await validate(structuredClone(doc) as any);
  if (!result.valid) throw new Error(compileErrors(result));
  expect(result.specification).toBe("OpenAPI");
}

describe("GET /api/v1/openapi.json against the OpenAPI 3.1 schema", () => {
  test("the generic document is valid OpenAPI 3.1", async () => {
    const doc = await documentOf("/api/v1/openapi.json");
    expect(doc.openapi).toMatch(/^3\.1\./);
    await expectValid(doc);
  });

  test("the document of one collection, with its fields and a relation, is valid too", async () => {
    for (const name of ["authors", "posts"])
      expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public" } })).status).toBe(201);
    const rel = await t.admin("POST", "/api/v1/admin/relations", { from_col: "posts", from_field: "author", to_col: "authors", type: "one" });
    expect(rel.status).toBe(201);
    const created = await t.admin("POST", "/api/v1/posts", { title: "a", n: 1, ok: true, meta: { a: 1 } });
    expect(created.status).toBe(201);
    const doc = await documentOf("/api/v1/openapi.json?collection=posts", ADMIN_SECRET);
    expect(JSON.stringify(doc)).toContain('"title"');
    await expectValid(doc);
  });

  test("the validator is not lenient: a broken copy of the document is refused", async () => {
    const doc = structuredClone(await documentOf("/api/v1/openapi.json"));
    const [path] = Object.keys(doc.paths);
    const op = Object.values<any>(doc.paths[path!]).find((o) => o && typeof o === "object" && o.responses)!;
    op.responses = { "200": { description: 1 } };
    const result = await validate(doc);
    expect(result.valid).toBe(false);
  });
});

/** Compiles `use` (which imports the generated `./api`) against the types openapi-typescript makes of `doc`; returns tsc's output. */
async function compileAgainst(doc: unknown, use: string[]): Promise<{ out: string; code: number | null }> {
  const source = astToString(await openapiTS(structuredClone(doc) as any));
  const dir = mkdtempSync(join(tmpdir(), "baas-openapi-ts-"));
  try {
    writeFileSync(join(dir, "api.d.ts"), source);
    writeFileSync(join(dir, "use.ts"), [...use, ""].join("\n"));
    const root = join(import.meta.dir, "../..");
    const proc = Bun.spawnSync(
      [join(root, "node_modules/.bin/tsc"), "--strict", "--noEmit", "--skipLibCheck", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", join(dir, "api.d.ts"), join(dir, "use.ts")],
      { cwd: dir },
    );
    return { out: proc.stdout.toString() + proc.stderr.toString(), code: proc.exitCode };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("openapi-typescript", () => {
  test("generates types from the document that compile with tsc --strict", async () => {
    const doc = await documentOf("/api/v1/openapi.json");
    const source = astToString(await openapiTS(structuredClone(doc)));
    expect(source).toContain("export interface paths");
    expect(source).toContain('"/api/v1/auth/login"');
    // A use of the generated types, so that a wrong shape of the login answer fails to compile.
    const { out, code } = await compileAgainst(doc, [
      'import type { paths } from "./api";',
      'type Login = paths["/api/v1/auth/login"]["post"];',
      'type Answer = Login["responses"][200]["content"]["application/json"];',
      'export const token = (a: Answer): string => ("access_token" in a ? a.access_token : a.totp_token);',
      'export const seconds = (a: Answer): number => ("expires_in" in a ? a.expires_in : 0);',
      'type Enabled = paths["/api/v1/auth/2fa/enable"]["post"]["responses"][200]["content"]["application/json"];',
      "export const codes = (a: Enabled): string[] => a.recovery_codes;",
    ]);
    expect(out).toBe("");
    expect(code).toBe(0);
  }, 120_000);

  test("the per-collection document gives typed relation fields, _expand and readable JSON fields", async () => {
    for (const name of ["ts_authors", "ts_posts", "ts_tags"])
      expect((await t.admin("POST", "/api/v1/admin/collections", { name, rules: { read: "public" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/ts_authors", { name: "Ada", profile: { city: "London" } })).status).toBe(201);
    expect((await t.admin("POST", "/api/v1/ts_posts", { title: "a", meta: { a: 1 } })).status).toBe(201);
    for (const rel of [
      { from_col: "ts_posts", from_field: "author", to_col: "ts_authors", type: "one" },
      { from_col: "ts_posts", from_field: "tags", to_col: "ts_tags", type: "many_via" },
    ])
      expect((await t.admin("POST", "/api/v1/admin/relations", rel)).status).toBe(201);
    const doc = await documentOf("/api/v1/openapi.json?collection=ts_posts", ADMIN_SECRET);
    const use = [
      'import type { components } from "./api";',
      'type Post = components["schemas"]["TsPostsRecord"];',
      "export const tags = (p: Post): string[] => p.tags;",
      "export const author = (p: Post): string | null => p.author;",
      "export const city = (p: Post): unknown => p._expand?.author?.profile && !Array.isArray(p._expand.author.profile) ? p._expand.author.profile.city : null;",
      "export const meta = (p: Post): unknown => (p.meta && !Array.isArray(p.meta) ? p.meta.a : null);",
    ];
    const { out, code } = await compileAgainst(doc, use);
    expect(out).toBe("");
    expect(code).toBe(0);
    // And the check is not lenient: a use that the document does not allow fails to compile.
    const wrong = await compileAgainst(doc, [...use, "export const n = (p: Post): number => p.tags;"]);
    expect(wrong.code).not.toBe(0);
  }, 120_000);
});
