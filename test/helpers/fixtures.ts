import { expect } from "bun:test";
import { registerUser, type TestApp, type TestResponse } from "./app.ts";

/** One-line set-ups for tests: collections with rules, relations, users with tokens and keys. */

export type Rule = "public" | "authenticated" | "owner" | "disabled" | { role: string };
export type Rules = Partial<Record<"read" | "create" | "update" | "delete", Rule>>;

export interface TestUser {
  id: string;
  email: string;
  token: string;
  refresh: string;
}

/** Creates a collection with these rules (the others take the defaults). */
export async function makeCollection(t: TestApp, name: string, rules: Rules = {}): Promise<void> {
  const res = await t.admin("POST", "/api/v1/admin/collections", { name, rules });
  if (res.status !== 201) throw new Error(`create collection ${name}: ${res.status} ${res.text}`);
}

/** Replaces some rules of a collection. */
export async function setRules(t: TestApp, name: string, rules: Rules): Promise<void> {
  const res = await t.admin("PUT", `/api/v1/admin/collections/${name}/rules`, { rules });
  if (res.status !== 200) throw new Error(`set rules of ${name}: ${res.status} ${res.text}`);
}

/** Creates a relation `from` ("posts.author") → `toCol`. */
export async function makeRelation(
  t: TestApp,
  from: string,
  toCol: string,
  type: "one" | "many" | "many_via",
  extra: { to_field?: string; on_delete?: string } = {},
): Promise<void> {
  const [from_col, from_field] = from.split(".");
  const res = await t.admin("POST", "/api/v1/admin/relations", { from_col, from_field, to_col: toCol, type, ...extra });
  if (res.status !== 201) throw new Error(`create relation ${from}: ${res.status} ${res.text}`);
}

/** Registers a user; with `roles`, the admin grants them and a fresh login puts them in the token. */
export async function makeUser(t: TestApp, email: string, roles: string[] = []): Promise<TestUser> {
  const u = await registerUser(t, email);
  if (!roles.length) return { id: u.id, email, token: u.token, refresh: u.refresh };
  expect((await t.admin("PATCH", `/api/v1/admin/users/${u.id}`, { roles })).status).toBe(200);
  return { id: u.id, email, ...(await login(t, email)) };
}

/** A new session of the user (password "password123", as `registerUser` sets). */
export async function login(t: TestApp, email: string): Promise<{ token: string; refresh: string }> {
  const res = await t.req("POST", "/api/v1/auth/login", { body: { email, password: "password123" } });
  if (res.status !== 200) throw new Error(`login ${email}: ${res.status} ${res.text}`);
  return { token: res.body.access_token, refresh: res.body.refresh_token };
}

/** Creates an API key with the user's access token; returns the key. */
export async function makeApiKey(t: TestApp, token: string, name = "key"): Promise<string> {
  const res = await t.req("POST", "/api/v1/auth/api-keys", { token, body: { name } });
  if (res.status !== 201) throw new Error(`create API key: ${res.status} ${res.text}`);
  return res.body.key;
}

/** Creates a record as the user holding `token` (admin when null); returns its `_id`. */
export async function makeRecord(t: TestApp, col: string, data: Record<string, unknown>, token: string | null = null): Promise<string> {
  const res = token ? await t.req("POST", `/api/v1/${col}`, { token, body: data }) : await t.admin("POST", `/api/v1/${col}`, data);
  if (res.status !== 201) throw new Error(`create record in ${col}: ${res.status} ${res.text}`);
  return res.body._id;
}

/** The session id (`sid` claim) of an access token. */
export function sessionIdOf(token: string): string {
  return JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()).sid;
}

/** Asserts CONTRACT §1's 401 for missing, invalid or revoked credentials. */
export function expectUnauthorized(res: TestResponse, what = ""): void {
  if (res.status !== 401) throw new Error(`${what}: expected 401, got ${res.status} ${res.text}`);
  expect(res.body).toEqual({ error: expect.any(String), code: "unauthorized" });
  expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
}

/**
 * `posts` (full-text indexed) with a relation of each kind: `author` (one → authors),
 * `comments` (many ← comments.post, cascade) and `tags` (many_via → tags).
 */
export async function makeBlog(t: TestApp, rules: { posts: Rules; targets: Rules }): Promise<void> {
  await makeCollection(t, "posts", rules.posts);
  for (const name of ["authors", "comments", "tags"]) await makeCollection(t, name, rules.targets);
  expect((await t.admin("POST", "/api/v1/admin/collections/posts/fts")).status).toBe(201);
  await makeRelation(t, "posts.author", "authors", "one");
  await makeRelation(t, "comments.post", "posts", "one", { on_delete: "cascade" });
  await makeRelation(t, "posts.comments", "comments", "many");
  await makeRelation(t, "posts.tags", "tags", "many_via");
}
