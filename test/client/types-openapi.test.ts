import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";
import { createTestApp } from "../helpers/app.ts";

// The client's types are written by hand; these tests hold them to the server's OpenAPI document,
// so a change of an answer's shape, a query option or a path shows up here.

const CLIENT = resolve(import.meta.dir, "../../client/src");
const t = createTestApp();
let doc: any;

beforeAll(async () => {
  doc = (await t.req("GET", "/api/v1/openapi.json")).body;
});
afterAll(() => t.close());

const program = ts.createProgram([join(CLIENT, "index.ts")], { strict: true, target: ts.ScriptTarget.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler });
const checker = program.getTypeChecker();

/** The properties of an exported interface of the client (inherited ones included), each with whether it is optional. */
function clientProps(file: string, name: string): Record<string, boolean> {
  const source = program.getSourceFile(join(CLIENT, file));
  if (!source) throw new Error(`no ${file}`);
  const symbol = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).find((s) => s.name === name);
  if (!symbol) throw new Error(`${file} exports no ${name}`);
  const type = checker.getDeclaredTypeOfSymbol(symbol);
  const out: Record<string, boolean> = {};
  for (const p of checker.getPropertiesOfType(type)) out[p.name] = (p.flags & ts.SymbolFlags.Optional) !== 0;
  return out;
}

/** The properties of a component schema of the document, each with whether it is optional (not required). */
function docProps(schema: any): Record<string, boolean> {
  if (schema.$ref) schema = doc.components.schemas[schema.$ref.split("/").pop()];
  const required = new Set(schema.required ?? []);
  return Object.fromEntries(Object.keys(schema.properties).map((k) => [k, !required.has(k)]));
}
const component = (name: string) => doc.components.schemas[name];

describe("the client's types agree with the OpenAPI document", () => {
  test.each([
    ["types.ts", "User", "UserBody"],
    ["types.ts", "Session", "SessionBody"],
    ["types.ts", "TotpRequired", "TotpRequiredBody"],
    ["types.ts", "ListResult", "RecordList"],
  ])("%s %s has the fields of %s, optional where the document does not require them", (file, name, schema) => {
    expect(clientProps(file, name)).toEqual(docProps(component(schema)));
  });

  test("SystemFields are the record's documented system fields", () => {
    expect(clientProps("types.ts", "SystemFields")).toEqual(docProps(component("RecordBody")));
  });

  test("FieldError is an element of the 422 body", () => {
    expect(clientProps("errors.ts", "FieldError")).toEqual(docProps(component("ValidationBody").properties.errors.items));
  });

  test("every query option of list, get, count and aggregate is a documented query parameter", () => {
    const params = (path: string) => (doc.paths[path].get.parameters ?? []).filter((p: any) => p.in === "query").map((p: any) => p.name);
    const options = (name: string) => Object.keys(clientProps("types.ts", name)).sort();
    expect(params("/api/v1/{collection}")).toEqual(expect.arrayContaining(options("ListOptions")));
    expect(params("/api/v1/{collection}/{id}")).toEqual(expect.arrayContaining(options("GetOptions")));
    expect(params("/api/v1/{collection}/count")).toEqual(expect.arrayContaining(options("MatchOptions")));
    expect(params("/api/v1/{collection}/aggregate")).toEqual(expect.arrayContaining(options("AggregateOptions")));
  });

  test("every call the client makes is a documented path and method", () => {
    const calls = new Set<string>();
    for (const file of readdirSync(CLIENT)) {
      const text = readFileSync(join(CLIENT, file), "utf8");
      for (const m of text.matchAll(/(?:request|send)(?:<[^>]*>)?\("([A-Z]+)", ("[^"]*"|`[^`]*`|base|one\(id\))/g)) {
        const path = m[2]!
          .replace(/^["`]|["`]$/g, "")
          .replace(/^base$/, "/{collection}")
          .replace(/^one\(id\)$/, "/{collection}/{id}")
          .replace("${base}", "/{collection}")
          .replace("${one(id)}", "/{collection}/{id}");
        calls.add(`${m[1]} /api/v1${path}`);
      }
    }
    expect(calls.size).toBeGreaterThan(15);
    const missing = [...calls].filter((c) => {
      const [method, path] = c.split(" ");
      return !doc.paths[path!]?.[method!.toLowerCase()];
    });
    expect(missing).toEqual([]);
  });
});
