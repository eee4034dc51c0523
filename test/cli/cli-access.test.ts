import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// The CLI works on the data directory of a running server (CONTRACT §8): a rule change, a user
// deleted or signed out, a role or a setting changed with the binary holds at the server's very
// next request, with no restart and no wait. The CLI itself never acts as a user (it has no
// record commands), so its own access is the admin's; what it must get right is that the server
// enforces what it changed.
setDefaultTimeout(60_000);

let bin: string;
let dir: string;
let server: ServerProcess;

/** Runs a command that must succeed; returns its --json output. */
async function cli(...args: string[]): Promise<any> {
  const r = await runCli(bin, ["--data", dir, ...args, "--json"]);
  if (r.code !== 0) throw new Error(`baas ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.json();
}

interface Res {
  status: number;
  body: any;
  headers: Headers;
}

async function http(method: string, path: string, opts: { body?: unknown; token?: string; key?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.key) headers["x-api-key"] = opts.key;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${server.url}/api/v1${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

async function register(email: string) {
  const r = await http("POST", "/auth/register", { body: { email, password: "password123" } });
  expect(r.status).toBe(201);
  return { id: r.body.user.id as string, token: r.body.access_token as string, refresh: r.body.refresh_token as string };
}

function expectError(res: Res, status: number, code: string, error: string | RegExp = /./) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  expect(Object.keys(res.body).sort()).toEqual(["code", "error"]);
  expect(res.body.error).toMatch(error);
  if (status === 401) expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
}

beforeAll(async () => {
  bin = await buildBinary();
  dir = tempDataDir();
  server = await spawnServer({ dir, cmd: [bin] });
});
afterAll(async () => {
  await server?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe("changes made with the CLI hold on a running server at once", () => {
  test("each read rule set with `collections rules` applies to the next request", async () => {
    await cli("collections", "create", "notes", "--read", "public", "--create", "authenticated");
    const ann = await register("rules-ann@example.com");
    const bob = await register("rules-bob@example.com");
    const annNote = (await http("POST", "/notes", { token: ann.token, body: { text: "ann's" } })).body._id;
    const bobNote = (await http("POST", "/notes", { token: bob.token, body: { text: "bob's" } })).body._id;
    // The server has served the collection under the old rule (its catalog is warm).
    expect((await http("GET", "/notes")).body.total).toBe(2);

    await cli("collections", "rules", "notes", "--read", "authenticated");
    expectError(await http("GET", "/notes"), 401, "unauthorized", '"read" on collection "notes" requires authentication');
    expectError(await http("GET", `/notes/${annNote}`), 401, "unauthorized");
    expect((await http("GET", "/notes/count", { token: ann.token })).body).toEqual({ total: 2 });

    await cli("collections", "rules", "notes", "--read", "owner");
    const own = await http("GET", "/notes", { token: ann.token });
    expect(own.body.items.map((r: { _id: string }) => r._id)).toEqual([annNote]);
    expectError(await http("GET", `/notes/${bobNote}`, { token: ann.token }), 404, "not_found", "record not found");

    await cli("collections", "rules", "notes", "--read", "role:editor");
    expectError(await http("GET", "/notes", { token: ann.token }), 403, "forbidden", '"read" on collection "notes" requires the role "editor"');

    await cli("collections", "rules", "notes", "--read", "disabled", "--create", "disabled");
    expectError(await http("GET", "/notes/count", { token: ann.token }), 403, "forbidden", '"read" is disabled on collection "notes"');
    expectError(await http("POST", "/notes", { token: ann.token, body: { text: "x" } }), 403, "forbidden", '"create" is disabled on collection "notes"');

    await cli("collections", "rules", "notes", "--read", "public", "--create", "authenticated");
    expect((await http("GET", "/notes")).body.total).toBe(2);
  });

  test("a role granted with `users roles` applies from the user's next refresh", async () => {
    await cli("collections", "create", "drafts", "--read", "role:editor");
    const cy = await register("roles-cy@example.com");
    expectError(await http("GET", "/drafts", { token: cy.token }), 403, "forbidden");
    await cli("users", "roles", "roles-cy@example.com", "editor");
    const refreshed = await http("POST", "/auth/refresh", { body: { refresh_token: cy.refresh } });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.user.roles).toEqual(["editor"]);
    expect((await http("GET", "/drafts", { token: refreshed.body.access_token })).status).toBe(200);
  });

  test("`users revoke-sessions`: the user's access and refresh tokens are refused at once", async () => {
    await cli("collections", "create", "memos", "--read", "authenticated");
    const dee = await register("revoke-dee@example.com");
    expect((await http("GET", "/memos", { token: dee.token })).status).toBe(200);
    expect(await cli("users", "revoke-sessions", "revoke-dee@example.com")).toEqual({ ok: true, sessions_revoked: 1 });
    expectError(await http("GET", "/memos", { token: dee.token }), 401, "unauthorized");
    expectError(await http("POST", "/auth/refresh", { body: { refresh_token: dee.refresh } }), 401, "invalid_token");
  });

  test("`users delete`: the user's access token, refresh token and API key are refused at once", async () => {
    await cli("collections", "create", "logs", "--read", "authenticated", "--create", "authenticated");
    const eve = await register("delete-eve@example.com");
    const key = (await http("POST", "/auth/api-keys", { token: eve.token, body: { name: "ci" } })).body.key as string;
    expect((await http("GET", "/logs", { key })).status).toBe(200);
    expect((await http("POST", "/logs", { token: eve.token, body: { line: "one" } })).status).toBe(201);
    const r = await runCli(bin, ["--data", dir, "users", "delete", "delete-eve@example.com", "--yes"]);
    expect(r.code).toBe(0);
    expectError(await http("GET", "/logs", { token: eve.token }), 401, "unauthorized");
    expectError(await http("POST", "/logs", { key, body: { line: "two" } }), 401, "unauthorized");
    expectError(await http("POST", "/auth/refresh", { body: { refresh_token: eve.refresh } }), 401, "invalid_token");
  });

  test("`collections delete`: the collection is gone for the server at once", async () => {
    await cli("collections", "create", "scratch", "--read", "public");
    expect((await http("GET", "/scratch")).status).toBe(200);
    expect((await runCli(bin, ["--data", dir, "collections", "delete", "scratch", "--yes"])).code).toBe(0);
    expectError(await http("GET", "/scratch"), 404, "not_found");
  });

  test("`settings set`: closing registration applies to the next request", async () => {
    try {
      await cli("settings", "set", "registration_open", "false");
      expectError(await http("POST", "/auth/register", { body: { email: "late@example.com", password: "password123" } }), 403, "registration_closed");
    } finally {
      await cli("settings", "set", "registration_open", "true");
    }
    expect((await http("POST", "/auth/register", { body: { email: "late@example.com", password: "password123" } })).status).toBe(201);
  });
});
