import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp, type TestResponse } from "../helpers/app.ts";
import { makeApiKey, makeBlog, makeRecord, makeUser, setRules, type Rule, type TestUser } from "../helpers/fixtures.ts";

// The denial matrix: every path that reads or writes records, under each rule that can deny,
// answers a denied caller with the exact status and body of CONTRACT §1/§4 and docs "Access
// rules": 401 when a user is needed, 403 when the rule denies, 404 for a record the caller may
// not read; a batch wraps the same message in 400 `batch_failed`.

type Op = "read" | "create" | "update" | "delete";

interface Ids {
  annPost: string;
  bobPost: string;
  annDeleted: string;
  bobDeleted: string;
}

let t: TestApp;
let ann: TestUser;
let bob: TestUser;
let ed: TestUser;
let ids: Ids;
/** API keys of Ann and Ed: a key acts as its user, with the roles the user has now. */
let annKey: string;
let edKey: string;

/** Posts of Ann and Bob (one active, one soft-deleted each), linked to an author, a comment and a tag. */
async function setup() {
  t = createTestApp();
  ann = await makeUser(t, "ann@example.com");
  bob = await makeUser(t, "bob@example.com");
  ed = await makeUser(t, "ed@example.com", ["editor"]);
  annKey = await makeApiKey(t, ann.token);
  edKey = await makeApiKey(t, ed.token);
  await makeBlog(t, { posts: { read: "public", create: "public", update: "public", delete: "public" }, targets: { read: "public", create: "public" } });
  const author = await makeRecord(t, "authors", { name: "Ann" });
  const tag = await makeRecord(t, "tags", { label: "news" });
  const post = async (u: TestUser, deleted: boolean) => {
    const id = await makeRecord(t, "posts", { title: `hello from ${u.email}`, n: 1, author, tags: [tag] }, u.token);
    await makeRecord(t, "comments", { post: id, text: "hi" }, u.token);
    if (deleted) expect((await t.req("DELETE", `/api/v1/posts/${id}`, { token: u.token })).status).toBe(200);
    return id;
  };
  ids = { annPost: await post(ann, false), bobPost: await post(bob, false), annDeleted: await post(ann, true), bobDeleted: await post(bob, true) };
}

/** A call on `posts` with `cred`, an access token or an API key (anonymous when null), against the records of `target`. */
type Call = (cred: string | null, target: { post: string; deleted: string }) => Promise<TestResponse>;

const send = (cred: string | null, method: string, path: string, body?: unknown) =>
  cred?.startsWith("baas_")
    ? t.req(method, `/api/v1${path}`, { headers: { "x-api-key": cred }, body })
    : t.req(method, `/api/v1${path}`, { token: cred, body });

/** Each path, the rule it answers to, and (for a batch) the op it carries. */
const PATHS: { name: string; op: Op; batch?: string; call: Call }[] = [
  { name: "get", op: "read", call: (k, r) => send(k, "GET", `/posts/${r.post}`) },
  { name: "list", op: "read", call: (k) => send(k, "GET", "/posts") },
  { name: "count", op: "read", call: (k) => send(k, "GET", "/posts/count") },
  { name: "aggregate", op: "read", call: (k) => send(k, "GET", "/posts/aggregate?fn=sum&field=n") },
  { name: "search", op: "read", call: (k) => send(k, "GET", "/posts?search=hello") },
  { name: "search count", op: "read", call: (k) => send(k, "GET", "/posts/count?search=hello") },
  { name: "search aggregate", op: "read", call: (k) => send(k, "GET", "/posts/aggregate?fn=count&search=hello") },
  { name: "expand one", op: "read", call: (k, r) => send(k, "GET", `/posts/${r.post}?expand=author`) },
  { name: "expand many", op: "read", call: (k) => send(k, "GET", "/posts?expand=comments") },
  { name: "expand many_via", op: "read", call: (k, r) => send(k, "GET", `/posts/${r.post}?expand=tags`) },
  { name: "create", op: "create", call: (k) => send(k, "POST", "/posts", { title: "new" }) },
  { name: "bulk", op: "create", call: (k) => send(k, "POST", "/posts/bulk", [{ title: "new" }, { title: "newer" }]) },
  { name: "update", op: "update", call: (k, r) => send(k, "PATCH", `/posts/${r.post}`, { title: "changed" }) },
  { name: "delete", op: "delete", call: (k, r) => send(k, "DELETE", `/posts/${r.post}`) },
  { name: "restore", op: "delete", call: (k, r) => send(k, "POST", `/posts/${r.deleted}/restore`) },
  {
    name: "batch create",
    op: "create",
    batch: "create",
    call: (k) => send(k, "POST", "/posts/batch", { operations: [{ op: "create", data: { title: "new" } }] }),
  },
  {
    name: "batch update",
    op: "update",
    batch: "update",
    call: (k, r) => send(k, "POST", "/posts/batch", { operations: [{ op: "update", id: r.post, data: { title: "changed" } }] }),
  },
  {
    name: "batch delete",
    op: "delete",
    batch: "delete",
    call: (k, r) => send(k, "POST", "/posts/batch", { operations: [{ op: "delete", id: r.post }] }),
  },
];

/** The body the single call answers; a batch wraps its message as operation 0. */
function expectDenied(res: TestResponse, path: (typeof PATHS)[number], status: number, code: string, message: string) {
  if (path.batch) {
    expect({ status: res.status, body: res.body }).toEqual({
      status: 400,
      body: { error: `operation 0 (${path.batch}): ${message}`, code: "batch_failed", index: 0, op: path.batch },
    });
    return;
  }
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { error: message, code } });
  if (status === 401) expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
}

/** Every record of `posts` as the admin sees it: a denied call must leave it as it was. */
async function snapshot() {
  return (await t.admin("GET", "/api/v1/posts?include_deleted=true&limit=500")).body.items;
}

describe("a rule that denies the caller outright", () => {
  beforeAll(setup);
  afterAll(() => t.close());

  const callers: { rule: Rule; who: string; cred: () => string | null; status: number; code: string; message: (op: Op) => string }[] = [
    { rule: "authenticated", who: "anonymous", cred: () => null, status: 401, code: "unauthorized", message: (op) => `"${op}" on collection "posts" requires authentication` },
    { rule: "owner", who: "anonymous", cred: () => null, status: 401, code: "unauthorized", message: (op) => `"${op}" on collection "posts" requires authentication` },
    { rule: { role: "editor" }, who: "anonymous", cred: () => null, status: 401, code: "unauthorized", message: (op) => `"${op}" on collection "posts" requires authentication` },
    { rule: { role: "editor" }, who: "a user without the role", cred: () => ann.token, status: 403, code: "forbidden", message: (op) => `"${op}" on collection "posts" requires the role "editor"` },
    { rule: "disabled", who: "anonymous", cred: () => null, status: 403, code: "forbidden", message: (op) => `"${op}" is disabled on collection "posts"` },
    { rule: "disabled", who: "a user", cred: () => ann.token, status: 403, code: "forbidden", message: (op) => `"${op}" is disabled on collection "posts"` },
    { rule: "disabled", who: "a user with a role", cred: () => ed.token, status: 403, code: "forbidden", message: (op) => `"${op}" is disabled on collection "posts"` },
    { rule: { role: "editor" }, who: "the API key of a user without the role", cred: () => annKey, status: 403, code: "forbidden", message: (op) => `"${op}" on collection "posts" requires the role "editor"` },
    { rule: "disabled", who: "the API key of a user with a role", cred: () => edKey, status: 403, code: "forbidden", message: (op) => `"${op}" is disabled on collection "posts"` },
  ];

  for (const c of callers)
    for (const p of PATHS)
      test(`${p.name} under ${p.op} rule ${JSON.stringify(c.rule)}, ${c.who}: ${p.batch ? 400 : c.status}`, async () => {
        // Only the rule under test closes anything; every other operation is public.
        await setRules(t, "posts", { read: "public", create: "public", update: "public", delete: "public", [p.op]: c.rule });
        const before = await snapshot();
        const res = await p.call(c.cred(), { post: ids.annPost, deleted: ids.annDeleted });
        expectDenied(res, p, c.status, c.code, c.message(p.op));
        expect(await snapshot()).toEqual(before);
      });

  for (const p of PATHS)
    test(`${p.name} under ${p.op} rule {"role":"editor"}: a user with the role is let through, by token and by API key`, async () => {
      await setRules(t, "posts", { read: "public", create: "public", update: "public", delete: "public", [p.op]: { role: "editor" } });
      for (const cred of [ed.token, edKey]) {
        const res = await p.call(cred, { post: ids.annPost, deleted: ids.annDeleted });
        expect(res.status).toBeLessThan(300);
        // Put back what an allowed write changed, for the next call and the tests after this one.
        await t.admin("POST", `/api/v1/posts/${ids.annPost}/restore`);
        if (p.name === "restore") expect((await t.admin("DELETE", `/api/v1/posts/${ids.annDeleted}`)).status).toBe(200);
      }
    });
});

describe("an owner rule and another user's record", () => {
  beforeAll(setup);
  afterAll(() => t.close());

  const bobs = () => ({ post: ids.bobPost, deleted: ids.bobDeleted });
  const owner = { read: "owner", create: "authenticated", update: "owner", delete: "owner" } as const;

  for (const readRule of ["owner", "authenticated"] as const) {
    // A record hidden by the read rule is 404 (its existence is not revealed); a readable one 403.
    const hidden = readRule === "owner";
    for (const p of PATHS.filter((x) => x.op === "update" || x.op === "delete" || (hidden && x.name === "get") || (hidden && x.name === "expand one")))
      test(`${p.name} of Bob's record by Ann (token and API key), read rule ${readRule}: ${p.batch ? 400 : hidden ? 404 : 403}`, async () => {
        await setRules(t, "posts", { ...owner, read: readRule });
        const before = await snapshot();
        for (const cred of [ann.token, annKey]) {
          const res = await p.call(cred, bobs());
          if (hidden) expectDenied(res, p, 404, "not_found", "record not found");
          else expectDenied(res, p, 403, "forbidden", `only the owner may ${p.op} this record`);
        }
        expect(await snapshot()).toEqual(before);
      });
  }

  const own = (res: TestResponse) => res.body.items.map((r: { _id: string }) => r._id);
  const reads: { name: string; path: string; expected: (res: TestResponse) => void }[] = [
    { name: "list", path: "/posts", expected: (r) => expect(own(r)).toEqual([ids.annPost]) },
    { name: "list with deleted", path: "/posts?include_deleted=true", expected: (r) => expect(own(r)).toEqual([ids.annPost, ids.annDeleted]) },
    { name: "list filtered on another owner", path: `/posts?filter=_owner_id:eq:BOB`, expected: (r) => expect(own(r)).toEqual([]) },
    { name: "search", path: "/posts?search=hello", expected: (r) => expect(own(r)).toEqual([ids.annPost]) },
    { name: "expand many", path: "/posts?expand=comments", expected: (r) => expect(own(r)).toEqual([ids.annPost]) },
    { name: "count", path: "/posts/count", expected: (r) => expect(r.body).toEqual({ total: 1 }) },
    { name: "count with deleted", path: "/posts/count?include_deleted=true", expected: (r) => expect(r.body).toEqual({ total: 2 }) },
    { name: "search count", path: "/posts/count?search=hello", expected: (r) => expect(r.body).toEqual({ total: 1 }) },
    { name: "aggregate", path: "/posts/aggregate?fn=sum&field=n", expected: (r) => expect(r.body).toEqual({ value: 1 }) },
    { name: "aggregate by owner", path: "/posts/aggregate?fn=count&group_by=_owner_id&include_deleted=true", expected: (r) => expect(r.body).toEqual({ groups: [{ group: ann.id, value: 2 }] }) },
    { name: "search aggregate", path: "/posts/aggregate?fn=count&search=hello", expected: (r) => expect(r.body).toEqual({ value: 1 }) },
  ];
  for (const r of reads)
    test(`${r.name} shows Ann only her own records (token and API key)`, async () => {
      await setRules(t, "posts", owner);
      for (const cred of [ann.token, annKey]) {
        const res = await send(cred, "GET", r.path.replace("BOB", bob.id));
        expect(res.status).toBe(200);
        r.expected(res);
      }
    });
});
