import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { q } from "../../src/db/ident.ts";
import { ADMIN_SECRET, createTestApp, registerUser } from "../helpers/app.ts";
import { countRows } from "../helpers/schema.ts";

// Every rule value on every data call, for every kind of requester (CONTRACT §1, §3, §4, §8b).
// The record under test is always owned by "owner"; "other" is a second user; "staff" has the role "staff".

const t = createTestApp();
afterAll(() => t.close());

type Who = "anon" | "owner" | "other" | "staff" | "admin";
const tokens: Record<Who, string | null> = { anon: null, owner: null, other: null, staff: null, admin: ADMIN_SECRET };
const ids: Partial<Record<Who, string>> = {};

beforeAll(async () => {
  const owner = await registerUser(t, "owner@example.com");
  const other = await registerUser(t, "other@example.com");
  const staff = await registerUser(t, "staff@example.com");
  await t.db.run("UPDATE _users SET roles = ? WHERE id = ?", [JSON.stringify(["staff"]), staff.id]);
  const login = await t.req("POST", "/api/v1/auth/login", { body: { email: "staff@example.com", password: "password123" } });
  Object.assign(tokens, { owner: owner.token, other: other.token, staff: login.body.access_token });
  Object.assign(ids, { owner: owner.id, other: other.id, staff: staff.id });
});

const RULES = {
  public: "public",
  authenticated: "authenticated",
  owner: "owner",
  disabled: "disabled",
  role: { role: "staff" },
} as const;
type RuleName = keyof typeof RULES;

let n = 0;
/** A collection whose rules are all public but `op`, which gets `rule`. */
async function collectionWith(op: string, rule: RuleName, extra: Record<string, unknown> = {}): Promise<string> {
  const name = `c${++n}_${op}_${rule}`;
  const rules = { read: "public", create: "public", update: "public", delete: "public", ...extra, [op]: RULES[rule] };
  const res = await t.admin("POST", "/api/v1/admin/collections", { name, rules });
  if (res.status !== 201) throw new Error(res.text);
  return name;
}

/** Makes `owner` the owner of a stored record. */
const setOwner = (col: string, id: string, owner: string) => t.db.run(`UPDATE ${q(col)} SET "_owner_id" = ? WHERE "_id" = ?`, [owner, id]);

/** A record owned by the "owner" user. */
async function seed(col: string, deleted = false): Promise<string> {
  const res = await t.admin("POST", `/api/v1/${col}`, { title: "seed" });
  await setOwner(col, res.body._id, ids.owner!);
  if (deleted) await t.admin("DELETE", `/api/v1/${col}/${res.body._id}`);
  return res.body._id;
}

const call = (who: Who, method: string, path: string, body?: unknown) => t.req(method, path, { token: tokens[who], body });

function expectStatus(res: { status: number; body: any; headers: Headers }, status: number) {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  const code = { 401: "unauthorized", 403: "forbidden", 404: "not_found" }[status as 401 | 403 | 404];
  if (code) expect(res.body).toEqual({ error: expect.any(String), code });
  if (status === 401) expect(res.headers.get("www-authenticate")).toBe("Bearer");
}

// Expected status per requester: anon, owner, other, staff, admin.
type Row = [RuleName, number, number, number, number, number];
const WHOS: Who[] = ["anon", "owner", "other", "staff", "admin"];

/** Runs `fn` for each requester in WHOS order with what it should get. */
async function forEachWho<T>(want: T[], fn: (who: Who, expected: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < WHOS.length; i++) await fn(WHOS[i], want[i]);
}

describe("read rule on GET /:collection/:id", () => {
  const table: Row[] = [
    ["public", 200, 200, 200, 200, 200],
    ["authenticated", 401, 200, 200, 200, 200],
    ["owner", 401, 200, 404, 404, 200],
    ["disabled", 403, 403, 403, 403, 200],
    ["role", 401, 403, 403, 200, 200],
  ];
  test.each(table)("read %s: anonymous %d, owner %d, other user %d, staff %d, admin %d", async (rule, w0, w1, w2, w3, w4) => {
    const want = [w0, w1, w2, w3, w4];
    const col = await collectionWith("read", rule);
    const id = await seed(col);
    await forEachWho(want, async (who, status) => {
      const res = await call(who, "GET", `/api/v1/${col}/${id}`);
      expectStatus(res, status);
      if (status === 200) expect(res.body._id).toBe(id);
    });
  });
});

describe("read rule on GET /:collection (list)", () => {
  const table: [RuleName, number | string, number | string, number | string, number | string, number | string][] = [
    ["public", "all", "all", "all", "all", "all"],
    ["authenticated", 401, "all", "all", "all", "all"],
    ["owner", 401, "own", "own", "own", "all"],
    ["disabled", 403, 403, 403, 403, "all"],
    ["role", 401, 403, 403, "all", "all"],
  ];
  test.each(table)("read %s: anonymous %p, owner %p, other user %p, staff %p, admin %p", async (rule, w0, w1, w2, w3, w4) => {
    const want = [w0, w1, w2, w3, w4];
    const col = await collectionWith("read", rule);
    const ownerRec = await seed(col);
    // A record of the "other" user, so owner filtering shows a difference.
    const o = await t.admin("POST", `/api/v1/${col}`, { title: "other's" });
    await setOwner(col, o.body._id, ids.other!);
    await forEachWho(want, async (who, w) => {
      const res = await call(who, "GET", `/api/v1/${col}`);
      if (typeof w === "number") return expectStatus(res, w);
      expect(res.status).toBe(200);
      const seen = res.body.items.map((r: { _id: string }) => r._id);
      if (w === "all") return void expect(seen).toEqual([ownerRec, o.body._id]);
      const mine = who === "owner" ? [ownerRec] : who === "other" ? [o.body._id] : [];
      expect(seen).toEqual(mine);
      expect(res.body.total).toBe(mine.length);
    });
  });
});

describe("create rule on POST /:collection", () => {
  const table: Row[] = [
    ["public", 201, 201, 201, 201, 201],
    ["authenticated", 401, 201, 201, 201, 201],
    ["owner", 401, 201, 201, 201, 201],
    ["disabled", 403, 403, 403, 403, 201],
    ["role", 401, 403, 403, 201, 201],
  ];
  test.each(table)("create %s: anonymous %d, owner %d, other user %d, staff %d, admin %d", async (rule, w0, w1, w2, w3, w4) => {
    const want = [w0, w1, w2, w3, w4];
    const col = await collectionWith("create", rule);
    await forEachWho(want, async (who, status) => {
      const res = await call(who, "POST", `/api/v1/${col}`, { title: who });
      expectStatus(res, status);
      if (status === 201) expect(res.body._owner_id).toBe(who === "anon" || who === "admin" ? null : ids[who]!);
    });
    // Nothing was stored by a refused create.
    expect(await countRows(t, col)).toBe(want.filter((s) => s === 201).length);
  });
});

for (const op of ["update", "delete", "restore"] as const) {
  const ruleOp = op === "restore" ? "delete" : op;
  const method = op === "update" ? "PATCH" : op === "delete" ? "DELETE" : "POST";
  const path = (col: string, id: string) => (op === "restore" ? `/api/v1/${col}/${id}/restore` : `/api/v1/${col}/${id}`);
  const body = op === "update" ? { title: "changed" } : undefined;

  describe(`${ruleOp} rule on ${method} ${op === "restore" ? "/:collection/:id/restore" : "/:collection/:id"}`, () => {
    const table: Row[] = [
      ["public", 200, 200, 200, 200, 200],
      ["authenticated", 401, 200, 200, 200, 200],
      ["owner", 401, 200, 403, 403, 200],
      ["disabled", 403, 403, 403, 403, 200],
      ["role", 401, 403, 403, 200, 200],
    ];
    test.each(table)(`${ruleOp} %s: anonymous %d, owner %d, other user %d, staff %d, admin %d`, async (rule, w0, w1, w2, w3, w4) => {
      const col = await collectionWith(ruleOp, rule);
      await forEachWho([w0, w1, w2, w3, w4], async (who, status) => {
        const id = await seed(col, op === "restore");
        const res = await call(who, method, path(col, id), body);
        expectStatus(res, status);
        const after = await t.admin("GET", `/api/v1/${col}/${id}?include_deleted=true`);
        if (status === 200) {
          expect(res.body._id).toBe(id);
          if (op === "update") expect(after.body.title).toBe("changed");
          if (op === "delete") expect(after.body._deleted_at).toBeNumber();
          if (op === "restore") expect(after.body._deleted_at).toBeNull();
        } else {
          expect(after.body.title).toBe("seed");
          expect(after.body._deleted_at === null).toBe(op !== "restore");
        }
      });
    });

    test(`owner ${ruleOp} rule with an owner read rule: another user's record is 404, not 403`, async () => {
      const col = await collectionWith(ruleOp, "owner", { read: "owner" });
      const id = await seed(col, op === "restore");
      expectStatus(await call("other", method, path(col, id), body), 404);
      expectStatus(await call("owner", method, path(col, id), body), 200);
    });

    test(`${method} of an unknown record is 404 whatever the rule allows`, async () => {
      const col = await collectionWith(ruleOp, "owner");
      expectStatus(await call("other", method, path(col, "01ARZ3NDEKTSV4RRFFQ69G5FAV"), body), 404);
    });
  });
}

describe("credentials on the data API", () => {
  test("a wrong or expired token is 401 even on a public collection (the client must refresh)", async () => {
    const col = await collectionWith("read", "public");
    expectStatus(await t.req("GET", `/api/v1/${col}`, { token: "not.a.token" }), 401);
    expectStatus(await t.req("GET", `/api/v1/${col}`, { token: "garbage" }), 401);
    expectStatus(await t.req("GET", `/api/v1/${col}`, { headers: { "x-api-key": "baas_nope" } }), 401);
  });

  test("the owner of records created by admin credentials is null, so an owner rule hides them from users", async () => {
    const col = await collectionWith("read", "owner");
    const rec = await t.admin("POST", `/api/v1/${col}`, { title: "admin's" });
    expect(rec.body._owner_id).toBeNull();
    expectStatus(await call("owner", "GET", `/api/v1/${col}/${rec.body._id}`), 404);
    expect((await call("owner", "GET", `/api/v1/${col}`)).body.items).toEqual([]);
    expect((await call("admin", "GET", `/api/v1/${col}`)).body.items.length).toBe(1);
  });

  test("X-Admin-Token with an admin token passes every rule on the data API too", async () => {
    const col = await collectionWith("create", "disabled");
    const login = await t.req("POST", "/api/v1/admin/login", { body: { secret: ADMIN_SECRET } });
    const res = await t.req("POST", `/api/v1/${col}`, { body: { a: 1 }, headers: { "x-admin-token": login.body.token } });
    expect(res.status).toBe(201);
  });
});
