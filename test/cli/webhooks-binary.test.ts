import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { buildBinary, runCli } from "../helpers/cli.ts";
import { freshDatabaseUrl, onPostgres } from "../helpers/engine.ts";
import { startReceiver, validSignature } from "../helpers/receiver.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

// The compiled binary, as it ships: a webhook event not yet delivered survives kill -9 of the server and is
// delivered after the restart; hook files are loaded again when they change on disk (Bun's module cache is
// forgotten in the binary too), and a broken file keeps the version before.

const SECRET = "a-receiver-secret-0123456789";
let bin: string;
const servers: ServerProcess[] = [];

const call = (srv: ServerProcess, method: string, path: string, body?: unknown) =>
  fetch(`${srv.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

beforeAll(async () => {
  bin = await buildBinary();
}, 180_000);
afterAll(async () => {
  for (const s of servers) await s.cleanup();
});

describe("webhooks in the compiled binary", () => {
  test("an event not yet delivered survives kill -9 and is delivered after the restart, once, signed, same event id", async () => {
    const receiver = startReceiver(() => 503);
    const dir = mkdtempSync(join(tmpdir(), "baas-whkill-"));
    try {
      const first = await spawnServer({ cmd: [bin], dir });
      servers.push(first);
      expect((await call(first, "POST", "/admin/collections", { name: "orders" })).status).toBe(201);
      const hook = await call(first, "POST", "/admin/webhooks", { url: receiver.url, collections: ["orders"], secret: SECRET });
      expect(hook.status).toBe(201);
      const rec = await call(first, "POST", "/orders", { total: 42 });
      expect(rec.status).toBe(201);
      // The receiver refused the first attempt: the delivery waits in the outbox for its retry.
      await waitFor(async () => (await call(first, "GET", `/admin/webhooks/${hook.body.id}/deliveries`)).body.items.length >= 1, {
        what: "the first (refused) attempt recorded",
      });
      await first.kill9();
      expect(receiver.got.every((r) => r.attempt >= 1)).toBe(true);
      const refused = receiver.got.length;
      receiver.answer = () => 200;

      const second = await spawnServer({ cmd: [bin], dir });
      servers.push(second);
      await waitFor(() => receiver.answered > refused && receiver.got.length > refused, { what: "the delivery after the restart" });
      await waitFor(async () => (await call(second, "GET", `/admin/webhooks/${hook.body.id}`)).body.pending === 0, { what: "no delivery pending" });
      const got = receiver.got;
      expect(new Set(got.map((r) => r.eventId)).size).toBe(1);
      expect(got.map((r) => r.attempt)).toEqual(got.map((_, i) => i + 1));
      const last = got.at(-1)!;
      expect(validSignature(last, SECRET)).toBe(true);
      expect(last.json).toEqual({ collection: "orders", action: "create", record: rec.body });
      const attempts = (await call(second, "GET", `/admin/webhooks/${hook.body.id}/deliveries`)).body.items;
      expect(attempts[0]).toMatchObject({ ok: true, response_status: 200, status: "delivered", attempt: got.length, event_id: last.eventId });
      expect(attempts.slice(1).every((a: any) => a.ok === false && a.response_status === 503)).toBe(true);
      await second.stop();
      // The CLI beside the data directory lists the webhook and its history; it sends nothing.
      const before = receiver.got.length;
      const list = await runCli(bin, ["webhooks", "deliveries", hook.body.id, "--json", "--data", dir], { cwd: dir });
      expect(list.code).toBe(0);
      expect(JSON.parse(list.stdout).items[0]).toMatchObject({ ok: true, status: "delivered" });
      expect(receiver.got.length).toBe(before);
    } finally {
      receiver.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("baas webhooks (the CLI)", () => {
  test("add shows the secret once, list masks it, deliveries and remove answer --json; bad input exits 1 or 2 with the reason", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baas-whcli-"));
    try {
      expect((await runCli(bin, ["collections", "create", "orders", "--data", dir], { cwd: dir })).code).toBe(0);
      const add = await runCli(bin, ["webhooks", "add", "https://example.com/in", "--collection", "orders", "--action", "delete", "--action", "create", "--json", "--data", dir], { cwd: dir });
      expect(add.code).toBe(0);
      const made = add.json();
      expect(made).toMatchObject({ url: "https://example.com/in", collections: ["orders"], actions: ["create", "delete"], enabled: true, pending: 0 });
      expect(made.secret).toStartWith("whsec_");
      const list = await runCli(bin, ["webhooks", "list", "--json", "--data", dir], { cwd: dir });
      expect(list.json()).toEqual({ items: [{ ...made, secret: "********" }] });
      const text = await runCli(bin, ["webhooks", "list", "--data", dir], { cwd: dir });
      expect(text.stdout).toContain("https://example.com/in");
      expect(text.stdout).not.toContain(made.secret);
      expect((await runCli(bin, ["webhooks", "deliveries", made.id, "--json", "--data", dir], { cwd: dir })).json()).toEqual({ items: [] });

      const ftp = await runCli(bin, ["webhooks", "add", "ftp://example.com/in", "--collection", "orders", "--data", dir], { cwd: dir });
      expect([ftp.code, ftp.stderr.trim()]).toEqual([1, "error: url must be an absolute http:// or https:// URL"]);
      const invalid = await runCli(bin, ["webhooks", "add", "https://example.com/in", "--collection", "no-pe", "--data", dir], { cwd: dir });
      expect([invalid.code, invalid.stderr.trim()]).toEqual([1, 'error: invalid collection name "no-pe"']);
      expect((await runCli(bin, ["webhooks", "add", "https://example.com/in", "--collection", "orders", "--action", "nope", "--data", dir], { cwd: dir })).code).toBe(2);
      // Comma-separated lists, the plural spellings, and every collection when none is named.
      expect((await runCli(bin, ["collections", "create", "payments", "--data", dir], { cwd: dir })).code).toBe(0);
      const listed = await runCli(bin, ["webhooks", "add", "https://example.com/two", "--collections", "orders,payments", "--actions", "create,update", "--json", "--data", dir], { cwd: dir });
      expect(listed.json()).toMatchObject({ collections: ["orders", "payments"], actions: ["create", "update"] });
      const all = await runCli(bin, ["webhooks", "add", "https://example.com/all", "--json", "--data", dir], { cwd: dir });
      expect(all.json()).toMatchObject({ collections: ["*"] });
      // An empty value (an unset shell variable) is a usage error, not "every collection".
      expect((await runCli(bin, ["webhooks", "add", "https://example.com/x", "--collection", "", "--data", dir], { cwd: dir })).code).toBe(2);
      expect((await runCli(bin, ["webhooks", "add", "https://example.com/x", "--action", ",", "--data", dir], { cwd: dir })).code).toBe(2);
      for (const w of [listed.json(), all.json()]) expect((await runCli(bin, ["webhooks", "remove", w.id, "--data", dir], { cwd: dir })).code).toBe(0);
      const missing = await runCli(bin, ["webhooks", "deliveries", "01NOPE", "--data", dir], { cwd: dir });
      expect([missing.code, missing.stderr.trim()]).toEqual([1, "error: webhook not found"]);

      const removed = await runCli(bin, ["webhooks", "remove", made.id, "--yes", "--json", "--data", dir], { cwd: dir });
      expect(removed.json()).toEqual({ ok: true });
      expect((await runCli(bin, ["webhooks", "list", "--json", "--data", dir], { cwd: dir })).json()).toEqual({ items: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.skipIf(!onPostgres)("two nodes on one PostgreSQL database", () => {
  test("two baas serve processes deliver each of many events exactly once, whichever node wrote it", async () => {
    const receiver = startReceiver();
    try {
      const url = await freshDatabaseUrl();
      const node = () => spawnServer({ cmd: [bin], args: ["--database", url] });
      const a = await node();
      servers.push(a);
      const b = await node();
      servers.push(b);
      expect((await call(a, "POST", "/admin/collections", { name: "orders" })).status).toBe(201);
      const hook = await call(b, "POST", "/admin/webhooks", { url: receiver.url, collections: ["orders"], secret: SECRET });
      expect(hook.status).toBe(201);
      const N = 200;
      const writes: Promise<{ status: number }>[] = [];
      for (let i = 0; i < N; i++) writes.push(call(i % 2 ? a : b, "POST", "/orders", { n: i }));
      expect((await Promise.all(writes)).every((r) => r.status === 201)).toBe(true);
      await waitFor(() => new Set(receiver.got.map((r) => r.eventId)).size >= N, { what: `${N} events`, progress: () => receiver.got.length });
      await waitFor(async () => (await call(a, "GET", `/admin/webhooks/${hook.body.id}`)).body.pending === 0, { what: "nothing pending" });
      const perEvent = new Map<string, number>();
      for (const r of receiver.got) perEvent.set(r.eventId, (perEvent.get(r.eventId) ?? 0) + 1);
      expect(perEvent.size).toBe(N);
      expect([...perEvent.values()].every((n) => n === 1)).toBe(true);
      expect(new Set(receiver.got.map((r) => r.json.record.n))).toEqual(new Set(Array.from({ length: N }, (_, i) => i)));
      expect(receiver.got.every((r) => validSignature(r, SECRET) && r.attempt === 1)).toBe(true);
    } finally {
      receiver.stop();
    }
  }, 120_000);
});

describe("hooks reload in the compiled binary", () => {
  test("a hook file changed on disk is picked up; a broken one keeps the version before and POST /admin/hooks/reload says why", async () => {
    const hooksDir = mkdtempSync(join(tmpdir(), "baas-binreload-"));
    const file = join(hooksDir, "posts.ts");
    const version = (n: number) => `export default { collection: "posts", beforeCreate(e: { data: Record<string, unknown> }): void { e.data!.version = ${n}; } };\n`;
    writeFileSync(file, version(1));
    try {
      const srv = await spawnServer({ cmd: [bin], env: { HOOKS_DIR: hooksDir } });
      servers.push(srv);
      expect((await call(srv, "POST", "/admin/collections", { name: "posts" })).status).toBe(201);
      const current = async () => (await call(srv, "POST", "/posts", {})).body.version;
      expect(await current()).toBe(1);
      writeFileSync(file, version(2));
      await waitFor(async () => (await current()) === 2, { what: "version 2 picked up from disk" });
      writeFileSync(file, "export default { collection: ");
      const res = await call(srv, "POST", "/admin/hooks/reload");
      expect(res.status).toBe(200);
      expect(res.body.items).toEqual([
        { file: "posts.ts", hooks: [{ collection: "posts", handlers: ["beforeCreate"] }], error: expect.stringContaining("posts.ts"), loaded_at: expect.any(Number) },
      ]);
      expect(await current()).toBe(2);
      await waitFor(() => srv.stderr().includes("hook file failed to load; its previous version stays in use"), { what: "the failure logged" });
      writeFileSync(file, version(3));
      await waitFor(async () => (await current()) === 3, { what: "version 3 picked up from disk" });
      expect((await call(srv, "GET", "/admin/hooks")).body.items[0].error).toBeNull();
    } finally {
      rmSync(hooksDir, { recursive: true, force: true });
    }
  }, 120_000);
});
