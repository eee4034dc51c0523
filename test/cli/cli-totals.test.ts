import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";

// A total the server remembers is dropped when the CLI, another process, changes the collection on the
// same data directory: the next request counts again.

setDefaultTimeout(60_000);

let bin: string;
let t: TestApp;
beforeAll(async () => {
  bin = await buildBinary();
  t = createTestApp({ dir: tempDataDir() });
});
afterAll(() => t.close());

async function cli(...args: string[]) {
  const r = await runCli(bin, ["--data", t.dir, ...args, "--json"]);
  if (r.code !== 0) throw new Error(`baas ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
}

test("a collection dropped and made again with the CLI lists total 0 at the next request, then counts its new records", async () => {
  await createCollection(t, "notes", { read: "public", create: "public" });
  for (let i = 0; i < 3; i++) expect((await t.req("POST", "/api/v1/notes", { body: { n: i } })).status).toBe(201);
  expect((await t.req("GET", "/api/v1/notes?limit=1")).body.total).toBe(3);
  expect((await t.req("GET", "/api/v1/notes?limit=1")).body.total).toBe(3);
  expect((await t.req("GET", "/api/v1/notes/count")).body).toEqual({ total: 3 });

  await cli("collections", "delete", "notes", "--yes");
  await cli("collections", "create", "notes", "--read", "public", "--create", "public");

  const res = await t.req("GET", "/api/v1/notes?limit=1");
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ items: [], next_cursor: null, total: 0 });
  expect((await t.req("GET", "/api/v1/notes/count")).body).toEqual({ total: 0 });
  expect((await t.req("POST", "/api/v1/notes", { body: { n: 9 } })).status).toBe(201);
  expect((await t.req("GET", "/api/v1/notes?limit=1")).body.total).toBe(1);
});
