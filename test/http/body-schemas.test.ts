import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ADMIN_SECRET, createCollection, createTestApp, patchSettings, registerUser } from "../helpers/app.ts";

// Registering users hashes passwords (argon2id), slow on a loaded machine.
setDefaultTimeout(30_000);

const t = createTestApp();
afterAll(() => t.close());

let user: { token: string; id: string };
let recordId: string;
beforeAll(async () => {
  user = await registerUser(t, "bodies@example.test");
  await createCollection(t, "things", { read: "public", create: "public", update: "public", delete: "public" });
  await createCollection(t, "locked", { read: "authenticated", create: "authenticated" });
  recordId = (await t.admin("POST", "/api/v1/things", { title: "a" })).body._id;
});

type Caller = "none" | "user" | "admin";
const send = (caller: Caller, method: string, path: string, body: unknown) =>
  t.req(method, path, { body, token: caller === "admin" ? ADMIN_SECRET : caller === "user" ? user.token : null });

const bad = (error: string) => ({ error, code: "bad_request" });
const OBJECT = "the request body must be a JSON object";

/** Every route that takes a body, with who may call it. */
const ROUTES: { name: string; caller: Caller; method: string; path: () => string; notObject?: string }[] = [
  { name: "register", caller: "none", method: "POST", path: () => "/api/v1/auth/register" },
  { name: "login", caller: "none", method: "POST", path: () => "/api/v1/auth/login" },
  { name: "refresh", caller: "none", method: "POST", path: () => "/api/v1/auth/refresh" },
  { name: "verify-email", caller: "none", method: "POST", path: () => "/api/v1/auth/verify-email" },
  { name: "magic-link", caller: "none", method: "POST", path: () => "/api/v1/auth/magic-link" },
  { name: "magic-link verify", caller: "none", method: "POST", path: () => "/api/v1/auth/magic-link/verify" },
  { name: "forgot-password", caller: "none", method: "POST", path: () => "/api/v1/auth/forgot-password" },
  { name: "reset-password", caller: "none", method: "POST", path: () => "/api/v1/auth/reset-password" },
  { name: "2fa verify", caller: "none", method: "POST", path: () => "/api/v1/auth/2fa/verify" },
  { name: "PATCH me", caller: "user", method: "PATCH", path: () => "/api/v1/auth/me" },
  { name: "2fa enable", caller: "user", method: "POST", path: () => "/api/v1/auth/2fa/enable" },
  { name: "2fa disable", caller: "user", method: "DELETE", path: () => "/api/v1/auth/2fa/disable" },
  { name: "create API key", caller: "user", method: "POST", path: () => "/api/v1/auth/api-keys" },
  { name: "admin login", caller: "none", method: "POST", path: () => "/api/v1/admin/login" },
  { name: "create collection", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections" },
  { name: "PATCH collection", caller: "admin", method: "PATCH", path: () => "/api/v1/admin/collections/things" },
  { name: "PUT rules", caller: "admin", method: "PUT", path: () => "/api/v1/admin/collections/things/rules" },
  { name: "settings", caller: "admin", method: "PATCH", path: () => "/api/v1/admin/settings", notObject: "settings must be a JSON object" },
  { name: "create index", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections/things/indexes" },
  { name: "create relation", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations" },
  { name: "create user", caller: "admin", method: "POST", path: () => "/api/v1/admin/users" },
  { name: "update user", caller: "admin", method: "PATCH", path: () => `/api/v1/admin/users/${user.id}` },
  { name: "test mail", caller: "admin", method: "POST", path: () => "/api/v1/admin/mail/test" },
  { name: "create record", caller: "none", method: "POST", path: () => "/api/v1/things" },
  { name: "update record", caller: "none", method: "PATCH", path: () => `/api/v1/things/${recordId}` },
  { name: "batch", caller: "none", method: "POST", path: () => "/api/v1/things/batch", notObject: 'the request body must be { "operations": [...] }' },
  { name: "realtime subscribe", caller: "none", method: "POST", path: () => "/api/v1/realtime" },
];

// Raw JSON texts: an array, a string, null and a number.
const NOT_OBJECTS = ["[1]", '"text"', "null", "5"];

describe("a body that is not a JSON object", () => {
  for (const r of ROUTES)
    test(`${r.method} ${r.name}: an array, a string, null or a number is 400 with the route's message`, async () => {
      for (const raw of NOT_OBJECTS) {
        const res = await send(r.caller, r.method, r.path(), raw);
        expect({ raw, status: res.status, body: res.body }).toEqual({ raw, status: 400, body: bad(r.notObject ?? OBJECT) });
      }
    });

  test("bulk: anything but an array is 400; an element that is not an object is 400 with its index", async () => {
    for (const raw of ['{"a":1}', '"text"', "null", "5"]) {
      const res = await send("none", "POST", "/api/v1/things/bulk", raw);
      expect({ raw, status: res.status, body: res.body }).toEqual({ raw, status: 400, body: bad("the request body must be a JSON array of record objects") });
    }
    for (const [raw, index] of [["[1]", 0], ['[{"a":1},"x"]', 1], ['[{},{},null]', 2], ["[{},[]]", 1]] as const) {
      const res = await send("none", "POST", "/api/v1/things/bulk", raw);
      expect({ raw, status: res.status, body: res.body }).toEqual({ raw, status: 400, body: { error: `record ${index} must be a JSON object`, code: "bad_request", index } });
    }
    const none = await send("none", "POST", "/api/v1/things/bulk", "[]");
    expect(none.body).toEqual(bad("a bulk insert takes 1 to 500 records, got 0"));
  });
});

const SIX_DIGITS = "the 6-digit code from the authenticator app";

/** A wrong-typed or missing field: the status and exact body each route answers. */
const FIELDS: { name: string; caller: Caller; method: string; path: () => string; body: unknown; status: number; answer: unknown }[] = [
  { name: "register with a number as email", caller: "none", method: "POST", path: () => "/api/v1/auth/register", body: { email: 5, password: "password123" }, status: 422, answer: { errors: [{ field: "email", rule: "required", message: '"email" is required.' }] } },
  { name: "login with a number as password", caller: "none", method: "POST", path: () => "/api/v1/auth/login", body: { email: "a@example.test", password: 5 }, status: 401, answer: { error: "invalid email or password", code: "invalid_credentials" } },
  { name: "verify-email with a number as token", caller: "none", method: "POST", path: () => "/api/v1/auth/verify-email", body: { token: 5 }, status: 400, answer: { error: "invalid or expired verification token", code: "invalid_token" } },
  { name: "magic-link verify with an object as token", caller: "none", method: "POST", path: () => "/api/v1/auth/magic-link/verify", body: { token: {} }, status: 401, answer: { error: "invalid or expired magic-link token", code: "invalid_token" } },
  { name: "forgot-password without email", caller: "none", method: "POST", path: () => "/api/v1/auth/forgot-password", body: {}, status: 422, answer: { errors: [{ field: "email", rule: "required", message: '"email" is required.' }] } },
  { name: "reset-password with a number as password", caller: "none", method: "POST", path: () => "/api/v1/auth/reset-password", body: { token: "x", password: 5 }, status: 422, answer: { errors: [{ field: "password", rule: "required", message: '"password" is required.' }] } },
  { name: "PATCH me with a number as metadata", caller: "user", method: "PATCH", path: () => "/api/v1/auth/me", body: { metadata: 5 }, status: 400, answer: bad("metadata must be a JSON object") },
  { name: "PATCH me without metadata", caller: "user", method: "PATCH", path: () => "/api/v1/auth/me", body: {}, status: 400, answer: bad("metadata is required") },
  { name: "PATCH me with another key", caller: "user", method: "PATCH", path: () => "/api/v1/auth/me", body: { metadata: {}, roles: ["admin"] }, status: 400, answer: bad('"roles" cannot be changed here; only metadata') },
  { name: "PATCH me with a key named like an Object method", caller: "user", method: "PATCH", path: () => "/api/v1/auth/me", body: { metadata: {}, constructor: 1 }, status: 400, answer: bad('"constructor" cannot be changed here; only metadata') },
  { name: "user with __proto__ as a key", caller: "admin", method: "POST", path: () => "/api/v1/admin/users", body: '{"email":"proto@example.test","__proto__":{"x":1}}', status: 400, answer: bad('unknown field "__proto__"; allowed: email, password, roles, metadata, is_verified') },
  { name: "2fa enable with a boolean as code", caller: "user", method: "POST", path: () => "/api/v1/auth/2fa/enable", body: { code: true }, status: 400, answer: bad(`code is required (${SIX_DIGITS})`) },
  { name: "API key with a number as name", caller: "user", method: "POST", path: () => "/api/v1/auth/api-keys", body: { name: 5 }, status: 400, answer: bad("name is required (a non-empty string)") },
  { name: "API key without name", caller: "user", method: "POST", path: () => "/api/v1/auth/api-keys", body: {}, status: 400, answer: bad("name is required (a non-empty string)") },
  { name: "API key with a blank name", caller: "user", method: "POST", path: () => "/api/v1/auth/api-keys", body: { name: "  " }, status: 400, answer: bad("name is required (a non-empty string)") },
  { name: "collection with a number as name", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections", body: { name: 5 }, status: 400, answer: bad("name is required") },
  { name: "collection with a string as rules", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections", body: { name: "typed_rules", rules: "public" }, status: 400, answer: bad("rules must be an object") },
  { name: "rules with an unknown key", caller: "admin", method: "PUT", path: () => "/api/v1/admin/collections/things/rules", body: { rules: {}, colour: "red" }, status: 400, answer: bad('unknown key "colour": expected rules or field_rules') },
  { name: "rules with neither rules nor field_rules", caller: "admin", method: "PATCH", path: () => "/api/v1/admin/collections/things", body: {}, status: 400, answer: bad("give rules, field_rules or both") },
  { name: "settings with a string for a boolean", caller: "admin", method: "PATCH", path: () => "/api/v1/admin/settings", body: { registration_open: "yes" }, status: 400, answer: bad('setting "registration_open" must be a boolean') },
  { name: "index with a string as fields", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections/things/indexes", body: { fields: "title" }, status: 400, answer: bad("fields must be an array of 1 to 16 field names") },
  { name: "index with a number among fields", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections/things/indexes", body: { fields: [1] }, status: 400, answer: bad("fields must be an array of field names") },
  { name: "index with a string as unique", caller: "admin", method: "POST", path: () => "/api/v1/admin/collections/things/indexes", body: { fields: ["title"], unique: "yes" }, status: 400, answer: bad("unique must be true or false") },
  { name: "relation with a number as from_col", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: 5, from_field: "a", to_col: "things", type: "one" }, status: 400, answer: bad("from_col must be a string") },
  { name: "relation with an empty from_field", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "", to_col: "things", type: "one" }, status: 400, answer: bad("from_field is required") },
  { name: "relation without to_col", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", type: "one" }, status: 400, answer: bad("to_col is required") },
  { name: "relation with a null type", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", to_col: "things", type: null }, status: 400, answer: bad("type is required") },
  { name: "relation with a number as type", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", to_col: "things", type: 1 }, status: 400, answer: bad("type must be a string") },
  { name: "relation with an unknown type", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", to_col: "things", type: "two" }, status: 400, answer: bad("type must be one of: one, many, many_via") },
  { name: "relation with an unknown on_delete", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", to_col: "things", type: "one", on_delete: "explode" }, status: 400, answer: bad("on_delete must be one of: restrict, cascade, set_null") },
  { name: "relation with a number as to_field", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", to_col: "things", type: "many", to_field: 1 }, status: 400, answer: bad("to_field must be a string") },
  { name: "relation with null on_delete and to_field, to an unknown collection", caller: "admin", method: "POST", path: () => "/api/v1/admin/relations", body: { from_col: "things", from_field: "a", to_col: "nothing", type: "one", on_delete: null, to_field: "" }, status: 404, answer: { error: expect.any(String), code: "not_found" } },
  { name: "user with a string as is_verified", caller: "admin", method: "POST", path: () => "/api/v1/admin/users", body: { email: "typed@example.test", is_verified: "yes" }, status: 400, answer: bad("is_verified must be a boolean") },
  { name: "user with a string as roles", caller: "admin", method: "POST", path: () => "/api/v1/admin/users", body: { email: "typed@example.test", roles: "admin" }, status: 400, answer: bad("roles must be an array of role names (letters, digits, _ . : -, up to 64 characters)") },
  { name: "user with an unknown field", caller: "admin", method: "POST", path: () => "/api/v1/admin/users", body: { email: "typed@example.test", nickname: "x" }, status: 400, answer: bad('unknown field "nickname"; allowed: email, password, roles, metadata, is_verified') },
  { name: "user created with totp_enabled", caller: "admin", method: "POST", path: () => "/api/v1/admin/users", body: { email: "typed@example.test", totp_enabled: false }, status: 400, answer: bad('unknown field "totp_enabled"; allowed: email, password, roles, metadata, is_verified') },
  { name: "user update with an unknown field", caller: "admin", method: "PATCH", path: () => `/api/v1/admin/users/${user.id}`, body: { nickname: "x" }, status: 400, answer: bad('unknown field "nickname"; allowed: email, password, roles, metadata, is_verified, totp_enabled') },
  { name: "user update turning 2FA on", caller: "admin", method: "PATCH", path: () => `/api/v1/admin/users/${user.id}`, body: { totp_enabled: true }, status: 400, answer: bad("totp_enabled can only be set to false: users turn two-factor authentication on themselves") },
  { name: "user update with an array as metadata", caller: "admin", method: "PATCH", path: () => `/api/v1/admin/users/${user.id}`, body: { metadata: [1] }, status: 400, answer: bad("metadata must be a JSON object") },
  { name: "test mail with a number as to", caller: "admin", method: "POST", path: () => "/api/v1/admin/mail/test", body: { to: 5 }, status: 422, answer: { errors: [{ field: "to", rule: "required", message: '"to" is required.' }] } },
  { name: "batch with a number as operations", caller: "none", method: "POST", path: () => "/api/v1/things/batch", body: { operations: 5 }, status: 400, answer: bad('"operations" must be an array') },
  { name: "batch without operations", caller: "none", method: "POST", path: () => "/api/v1/things/batch", body: {}, status: 400, answer: bad('"operations" must be an array') },
  { name: "batch with no operation", caller: "none", method: "POST", path: () => "/api/v1/things/batch", body: { operations: [] }, status: 400, answer: bad("a batch takes 1 to 100 operations, got 0") },
];

const failed = (index: number, op: string, reason: string) => ({ error: `operation ${index} (${op}): ${reason}`, code: "batch_failed", index, op });

/** Malformed operations of a batch: 400 batch_failed naming the operation. */
const OPERATIONS: [string, unknown[], unknown][] = [
  ["a number as an operation", [5], failed(0, "unknown", "an operation must be a JSON object")],
  ["an unknown op", [{ op: "create", data: {} }, { op: "upsert", data: {} }], failed(1, "upsert", '"op" must be "create", "update" or "delete"')],
  ["a number as op", [{ op: 5 }], failed(0, "unknown", '"op" must be "create", "update" or "delete"')],
  ["an unknown key", [{ op: "create", data: {}, extra: 1 }], failed(0, "create", 'unknown key "extra" (expected op, id, data)')],
  ["an update without id", [{ op: "update", data: {} }], failed(0, "update", '"id" must be a record id')],
  ["a delete with a number as id", [{ op: "delete", id: 5 }], failed(0, "delete", '"id" must be a record id')],
  ["a create with an array as data", [{ op: "create", data: [] }], failed(0, "create", '"data" must be a JSON object')],
];

describe("a field of the wrong type", () => {
  for (const f of FIELDS)
    test(`${f.name}: ${f.status}`, async () => {
      const res = await send(f.caller, f.method, f.path(), f.body);
      expect({ status: res.status, body: res.body }).toEqual({ status: f.status, body: f.answer });
    });

  for (const [name, operations, answer] of OPERATIONS)
    test(`a batch with ${name}: 400 batch_failed, nothing written`, async () => {
      const before = (await t.req("GET", "/api/v1/things/count")).body.total;
      const res = await send("none", "POST", "/api/v1/things/batch", { operations });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: answer });
      expect((await t.req("GET", "/api/v1/things/count")).body.total).toBe(before);
    });

  test("a create operation ignores a non-string id, a delete a non-object data", async () => {
    const res = await send("none", "POST", "/api/v1/things/batch", { operations: [{ op: "create", id: 5, data: { title: "b" } }] });
    expect(res.status).toBe(200);
    const created = res.body.results[0].record._id;
    const del = await send("none", "POST", "/api/v1/things/batch", { operations: [{ op: "delete", id: created, data: 5 }] });
    expect(del.body).toEqual({ results: [{ op: "delete", id: created }] });
  });
});

describe("credentials, settings and the collection are checked before the body", () => {

  test("an admin route answers 401 without credentials and 403 to a user, whatever the body", async () => {
    for (const r of ROUTES.filter((r) => r.caller === "admin"))
      for (const raw of ["[1]", '{"fields":5,"name":5,"email":5}']) {
        const none = await send("none", r.method, r.path(), raw);
        expect({ route: r.name, status: none.status }).toEqual({ route: r.name, status: 401 });
        const asUser = await send("user", r.method, r.path(), raw);
        expect({ route: r.name, status: asUser.status, code: asUser.body.code }).toEqual({ route: r.name, status: 403, code: "forbidden" });
      }
  });

  test("a user route answers 401 without a token, whatever the body", async () => {
    for (const r of ROUTES.filter((r) => r.caller === "user")) {
      const res = await send("none", r.method, r.path(), "[1]");
      expect({ route: r.name, status: res.status, code: res.body.code }).toEqual({ route: r.name, status: 401, code: "unauthorized" });
    }
  });

  test("the data API answers 404 for an unknown collection or record and 401 where the rule denies, whatever the body", async () => {
    for (const [method, path] of [["POST", "/api/v1/nothing"], ["PATCH", "/api/v1/nothing/01NOPE"], ["POST", "/api/v1/nothing/bulk"], ["POST", "/api/v1/nothing/batch"]]) {
      const res = await send("none", method!, path!, '"text"');
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 404, code: "not_found" });
    }
    for (const path of ["/api/v1/locked", "/api/v1/locked/bulk"]) {
      const res = await send("none", "POST", path, '"text"');
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 401, body: { error: '"create" on collection "locked" requires authentication', code: "unauthorized" } });
    }
  });

  test("an update of an unknown record checks the body first (the record is looked up in the write's transaction)", async () => {
    const res = await send("none", "PATCH", "/api/v1/things/01NOPE", '"text"');
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: bad(OBJECT) });
  });

  test("an admin route naming an unknown user or collection answers 404 before the body is read", async () => {
    for (const path of ["/api/v1/admin/users/01NOPE", "/api/v1/admin/collections/nothing/indexes"]) {
      const res = await send("admin", path.endsWith("indexes") ? "POST" : "PATCH", path, "[1]");
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 404, code: "not_found" });
    }
  });

  test("a disabled method answers 403 method_disabled, whatever the body", async () => {
    await patchSettings(t, { auth_magic_link_enabled: false, auth_password_enabled: false, auth_totp_enabled: false, auth_api_keys_enabled: false });
    try {
      // Login and registration read the body first (an object is needed to say which method is used).
      const checkFirst = ["magic-link", "magic-link verify", "forgot-password", "reset-password", "2fa enable", "create API key"];
      for (const r of ROUTES.filter((r) => [...checkFirst, "login", "register"].includes(r.name)))
        for (const raw of checkFirst.includes(r.name) ? ["[1]", '{"email":5,"code":true,"name":5,"token":5}'] : ['{"email":5}']) {
          const res = await send(r.caller, r.method, r.path(), raw);
          expect({ route: r.name, raw, status: res.status, code: res.body.code }).toEqual({ route: r.name, raw, status: 403, code: "method_disabled" });
        }
    } finally {
      await patchSettings(t, { auth_magic_link_enabled: true, auth_password_enabled: true, auth_totp_enabled: true, auth_api_keys_enabled: true });
    }
  });
});


/** Each query answers 400 bad_request with its message. */
async function expectBadQueries(caller: Caller, cases: [string, string][]) {
  for (const [path, error] of cases) {
    const res = await send(caller, "GET", path, undefined);
    expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 400, body: bad(error) });
  }
}

describe("the query string of GET /admin/users", () => {
  const list = (query: string) => send("admin", "GET", `/api/v1/admin/users${query}`, undefined);

  test("limit and page outside their range, or not digits, are 400 naming the range", async () => {
    await expectBadQueries("admin", [
      ["/api/v1/admin/users?limit=0", "limit must be an integer between 1 and 500"],
      ["/api/v1/admin/users?limit=501", "limit must be an integer between 1 and 500"],
      ["/api/v1/admin/users?limit=%2B5", "limit must be an integer between 1 and 500"],
      ["/api/v1/admin/users?limit=2.5", "limit must be an integer between 1 and 500"],
      ["/api/v1/admin/users?page=x", "page must be an integer between 1 and 1000000"],
      ["/api/v1/admin/users?page=1000001", "page must be an integer between 1 and 1000000"],
      ["/api/v1/admin/users?page=99999999999999999999", "page must be an integer between 1 and 1000000"],
    ]);
  });

  test("an empty value is the default, and the first of repeated values counts", async () => {
    const all = await list("");
    expect((await list("?limit=&page=")).body).toEqual(all.body);
    const one = await list("?limit=1&limit=x");
    expect({ status: one.status, items: one.body.items.length }).toEqual({ status: 200, items: 1 });
    expect((await list("?limit=007")).body.items.length).toBe(Math.min(7, all.body.total));
  });

  test("without admin credentials a bad query string is 401", async () => {
    expect((await send("none", "GET", "/api/v1/admin/users?limit=0", undefined)).status).toBe(401);
  });
});

describe("the scalar parameters of the data API's query strings", () => {
  const get = (path: string) => send("none", "GET", path, undefined);

  test("limit, page, include_deleted and total out of their type or range are 400 naming the parameter", async () => {
    await expectBadQueries("none", [
      ["/api/v1/things?limit=0", "limit must be an integer between 1 and 500"],
      ["/api/v1/things?limit=abc", "limit must be an integer between 1 and 500"],
      ["/api/v1/things?limit=-1", "limit must be an integer between 1 and 500"],
      ["/api/v1/things?page=0", "page must be an integer between 1 and 10000000"],
      ["/api/v1/things?page=10000001", "page must be an integer between 1 and 10000000"],
      ["/api/v1/things?include_deleted=yes", "include_deleted must be true or false"],
      ["/api/v1/things?total=maybe", "total must be true or false"],
      ["/api/v1/things?limit=2&limit=x", "limit must be an integer between 1 and 500"],
      ["/api/v1/things/count?include_deleted=2", "include_deleted must be true or false"],
      ["/api/v1/things/aggregate?fn=count&include_deleted=TRUE", "include_deleted must be true or false"],
      [`/api/v1/things/01NOPE?include_deleted=no`, "include_deleted must be true or false"],
      [`/api/v1/nothing/01NOPE?include_deleted=no`, "include_deleted must be true or false"],
    ]);
  });

  test("an empty value is the default; on a list the last of repeated values counts, on a read the first", async () => {
    const res = await get("/api/v1/things?limit=&page=&total=&include_deleted=");
    expect({ status: res.status, total: typeof res.body.total }).toEqual({ status: 200, total: "number" });
    expect((await get("/api/v1/things?limit=x&limit=1")).body.items.length).toBe(1);
    expect((await get("/api/v1/things?total=0")).body.total).toBeNull();
    expect((await get(`/api/v1/things/${recordId}?include_deleted=1&include_deleted=x`)).status).toBe(200);
    expect((await get(`/api/v1/things/${recordId}?include_deleted=x&include_deleted=1`)).status).toBe(400);
  });

  test("include_deleted=1 or true shows a soft-deleted record on a read, a list and a count", async () => {
    const id = (await t.admin("POST", "/api/v1/things", { title: "gone" })).body._id;
    await t.admin("DELETE", `/api/v1/things/${id}`);
    expect((await get(`/api/v1/things/${id}`)).status).toBe(404);
    expect((await get(`/api/v1/things/${id}?include_deleted=1`)).body._id).toBe(id);
    const listed = (await get("/api/v1/things?include_deleted=true&limit=500")).body.items.map((r: { _id: string }) => r._id);
    expect(listed).toContain(id);
    const count = async (query: string) => (await get(`/api/v1/things/count?filter=_id:eq:${id}${query}`)).body.total;
    expect([await count(""), await count("&include_deleted=1")]).toEqual([0, 1]);
  });

  test("an unknown collection is 404 and a denied read 401 before a list's parameters are checked", async () => {
    for (const path of ["/api/v1/nothing?limit=0", "/api/v1/nothing/count?include_deleted=x", "/api/v1/nothing/aggregate?fn=count&include_deleted=x"])
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 404 });
    expect((await get("/api/v1/locked?limit=0")).status).toBe(401);
  });
});

describe("PATCH /admin/settings", () => {
  test("each setting is checked against its type, range and length, and a bad patch changes nothing", async () => {
    const before = (await t.admin("GET", "/api/v1/admin/settings")).body;
    for (const [patch, error] of [
      [{ registration_open: "yes" }, 'setting "registration_open" must be a boolean'],
      [{ app_name: 5 }, 'setting "app_name" must be a string'],
      [{ app_name: "x".repeat(4097) }, 'setting "app_name" is too long'],
      [{ access_token_ttl_seconds: "900" }, 'setting "access_token_ttl_seconds" must be an integer'],
      [{ access_token_ttl_seconds: 1.5 }, 'setting "access_token_ttl_seconds" must be an integer'],
      [{ access_token_ttl_seconds: 0 }, 'setting "access_token_ttl_seconds" must be between 1 and 31536000'],
      [{ refresh_token_ttl_days: 3651 }, 'setting "refresh_token_ttl_days" must be between 1 and 3650'],
      [{ app_name: "ok", colour: "red" }, 'unknown setting "colour"'],
      [{ app_name: "  " }, 'setting "app_name" must not be empty'],
    ] as const) {
      const res = await t.admin("PATCH", "/api/v1/admin/settings", patch);
      expect({ patch, status: res.status, body: res.body }).toEqual({ patch, status: 400, body: bad(error) });
    }
    expect((await t.admin("GET", "/api/v1/admin/settings")).body).toEqual(before);
  });

  test("the read-only redirect addresses sent back are ignored", async () => {
    const all = (await t.admin("GET", "/api/v1/admin/settings")).body;
    const res = await t.admin("PATCH", "/api/v1/admin/settings", { ...all, app_name: all.app_name });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: all });
  });
});
