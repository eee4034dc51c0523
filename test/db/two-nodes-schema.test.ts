import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli } from "../helpers/cli.ts";
import { freshDatabaseUrl } from "../helpers/engine.ts";
import { postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// Two `baas serve` processes of the compiled binary on one PostgreSQL database (CONTRACT §11, §13): a schema
// the CLI applies to the database (a field renamed, one retyped, one added) holds on both nodes at their next
// request, also for statements each node prepared against the columns as they were.

setDefaultTimeout(120_000);
warnIfSkipped();

let bin: string;
let url: string;
let a: ServerProcess;
let b: ServerProcess;
let work: string;

async function call(node: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${node.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe.skipIf(!postgresAvailable)("a schema applied on one PostgreSQL database with two nodes", () => {
  beforeAll(async () => {
    [bin, url] = await Promise.all([buildBinary(), freshDatabaseUrl()]);
    work = mkdtempSync(join(tmpdir(), "baas-schema-nodes-"));
    a = await spawnServer({ cmd: [bin], args: ["--database", url] });
    // One connection: every statement of B runs prepared on the connection that prepared it first.
    b = await spawnServer({ cmd: [bin], args: ["--database", url], env: { DB_POOL_SIZE: "1" } });
  });

  afterAll(async () => {
    if (process.env.SHOW_NODE_LOGS) console.error(a?.stderr(), b?.stderr());
    await a?.cleanup();
    await b?.cleanup();
    rmSync(work, { recursive: true, force: true });
  });

  test("each node sees the new fields, names and types at its next request, its prepared statements included", async () => {
    const schema = {
      collections: [
        { name: "items", rules: { read: "public", create: "public" }, fields: [{ name: "title", type: "text" }, { name: "code", type: "text" }] },
        { name: "counts", rules: { read: "public", create: "public" }, fields: [{ name: "n", type: "text" }] },
      ],
    };
    const file = join(work, "schema.json");
    writeFileSync(file, JSON.stringify(schema));
    expect((await runCli(bin, ["--database", url, "schema", "apply", file, "--yes"])).code).toBe(0);

    // Both nodes prepare their statements on the columns as they are: a write, a read by id, a filter, a list.
    // (Of `counts`, a change of type alone leaves every statement's text as it was.)
    const ids: string[] = [];
    const counts: string[] = [];
    for (const node of [a, b]) {
      const n = await call(node, "POST", "/counts", { n: "5" });
      counts.push(n.body._id);
      expect((await call(node, "GET", `/counts/${n.body._id}`)).body.n).toBe("5");
      expect((await call(node, "GET", "/counts?filter=n:eq:5")).status).toBe(200);
      const made = await call(node, "POST", "/items", { title: "first", code: "12" });
      expect(made.status).toBe(201);
      ids.push(made.body._id);
      expect((await call(node, "GET", `/items/${made.body._id}`)).body.code).toBe("12");
      expect((await call(node, "GET", "/items?filter=code:eq:12")).body.total).toBe(ids.length);
      expect((await call(node, "GET", "/items")).status).toBe(200);
    }

    const next = {
      collections: [
        {
          name: "items",
          rules: { read: "public", create: "public" },
          fields: [{ name: "name", type: "text", renamed_from: "title" }, { name: "code", type: "number" }, { name: "qty", type: "number" }],
        },
        { name: "counts", rules: { read: "public", create: "public" }, fields: [{ name: "n", type: "text" }] },
      ],
    };
    writeFileSync(file, JSON.stringify(next));
    const applied = await runCli(bin, ["--database", url, "schema", "apply", file, "--yes", "--json"]);
    expect(applied.code).toBe(0);
    expect(applied.json().changes.map((c: any) => c.action)).toEqual(["rename_field", "retype_field", "add_field"]);

    let above5 = 2;
    for (const node of [b, a]) {
      const one = await call(node, "GET", `/items/${ids[0]}`);
      expect({ status: one.status, body: one.body }).toMatchObject({ status: 200, body: { name: "first", code: 12, qty: null } });
      expect("title" in one.body).toBe(false);
      expect((await call(node, "GET", "/items?filter=code:gt:5&sort=-code")).body.total).toBe(above5++);
      const made = await call(node, "POST", "/items", { name: "second", code: 7, qty: 1 });
      expect({ status: made.status, code: made.body.code }).toEqual({ status: 201, code: 7 });
      expect((await call(node, "POST", "/items", { code: "not a number" })).status).toBe(422);
      expect((await call(node, "GET", "/items?filter=qty:eq:1")).body.total).toBeGreaterThan(0);
    }
    expect((await call(a, "GET", "/items")).body.total).toBe(4);

    // A change of type alone (the statements' text stays as it was), after each node prepared them again.
    for (const node of [a, b]) {
      expect((await call(node, "GET", `/counts/${counts[0]}`)).body.n).toBe("5");
      expect((await call(node, "GET", "/counts?filter=n:eq:5")).body.total).toBe(2);
    }
    next.collections[1]!.fields = [{ name: "n", type: "number" }];
    writeFileSync(file, JSON.stringify(next));
    const retyped = await runCli(bin, ["--database", url, "schema", "apply", file, "--yes", "--json"]);
    expect(retyped.json().changes).toEqual([{ action: "retype_field", target: "counts.n", detail: "text → number" }]);
    for (const node of [b, a]) {
      const n = await call(node, "GET", `/counts/${counts[0]}`);
      expect({ status: n.status, n: n.body.n }).toEqual({ status: 200, n: 5 });
      expect((await call(node, "GET", "/counts?filter=n:eq:5")).body.total).toBe(2);
      expect((await call(node, "POST", "/counts", { n: 6 })).status).toBe(201);
    }
  });
});
