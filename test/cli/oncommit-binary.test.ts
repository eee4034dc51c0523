import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// onCommit in a hook file run by the compiled server: it appends each change event to a file,
// after the commit, and a failing one is logged by the server while the client gets its 2xx.
const hooksDir = mkdtempSync(join(tmpdir(), "baas-bincommit-"));
const out = join(hooksDir, "events.log");
writeFileSync(
  join(hooksDir, "notes.ts"),
  `import { appendFileSync } from "node:fs";
export default {
  collection: "notes",
  async onCommit(event: { action: string; record: Record<string, unknown> }): Promise<void> {
    if (event.record.title === "fail") throw new Error("webhook down");
    appendFileSync(${JSON.stringify(out)}, event.action + " " + event.record._id + "\\n");
  },
};
`,
);

let srv: ServerProcess;
const headers = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };

/** Sends one admin request to the spawned server; resolves to its status and parsed body. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const init: RequestInit = { method, headers };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(`${srv.url}/api/v1${path}`, init);
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  srv = await spawnServer({ cmd: [await buildBinary()], env: { HOOKS_DIR: hooksDir } });
}, 180_000);
afterAll(async () => {
  await srv?.cleanup();
  rmSync(hooksDir, { recursive: true, force: true });
});

/** The lines onCommit wrote, once there are `n` of them (polled with a deadline). */
async function lines(n: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = existsSync(out) ? readFileSync(out, "utf8").split("\n").filter(Boolean) : [];
    if (got.length >= n || Date.now() > deadline) return got;
    await Bun.sleep(20);
  }
}

test("the compiled server runs onCommit once per committed change, never for a rolled-back one, and survives its failure", async () => {
  expect((await call("POST", "/admin/collections", { name: "notes" })).status).toBe(201);
  const a = await call("POST", "/notes", { title: "a" });
  expect(a.status).toBe(201);
  const failed = await call("POST", "/notes/batch", { operations: [{ op: "create", data: { title: "b" } }, { op: "update", id: "missing", data: {} }] });
  expect(failed.status).toBe(400);
  const boom = await call("POST", "/notes", { title: "fail" });
  expect(boom.status).toBe(201);
  expect((await call("DELETE", `/notes/${a.body._id}`)).status).toBe(200);
  expect(await lines(2)).toEqual([`create ${a.body._id}`, `delete ${a.body._id}`]);
  const deadline = Date.now() + 10_000;
  while (!srv.stderr().includes("onCommit hook failed") && Date.now() < deadline) await Bun.sleep(20);
  expect(srv.stderr()).toContain("webhook down");
  expect(readFileSync(out, "utf8")).toBe(`create ${a.body._id}\ndelete ${a.body._id}\n`);
}, 60_000);
