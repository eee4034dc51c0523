import { expect, test } from "bun:test";
import { appPerTest } from "../helpers/app.ts";

// Two requests that take the same email at once: one wins, every other gets the answer for a taken email,
// 409 `conflict` (CONTRACT §8b), not the unique index's 409 `unique_violation`.

const t = appPerTest();

const CONFLICT = { status: 409, body: { error: "a user with this email already exists", code: "conflict" } };

test("users created at once with one email: one 201, the others 409 conflict", async () => {
  const answers = await Promise.all(Array.from({ length: 6 }, () => t.admin("POST", "/api/v1/admin/users", { email: "same@example.com" })));
  expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
  for (const r of answers.filter((r) => r.status !== 201)) expect({ status: r.status, body: r.body }).toEqual(CONFLICT);
});

test("emails changed at once to one address: one 200, the others 409 conflict", async () => {
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push((await t.admin("POST", "/api/v1/admin/users", { email: `u${i}@example.com` })).body.id);
  const answers = await Promise.all(ids.map((id) => t.admin("PATCH", `/api/v1/admin/users/${id}`, { email: "taken@example.com" })));
  expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
  for (const r of answers.filter((r) => r.status !== 200)) expect({ status: r.status, body: r.body }).toEqual(CONFLICT);
});
