import { expect, test } from "bun:test";
import { ADMIN, ANONYMOUS, type Principal } from "../../src/principal.ts";
import type { Collection, Operation } from "../../src/catalog/types.ts";
import { AppError } from "../../src/errors.ts";
import { readDecision } from "../../src/records/access.ts";
import { accessOf, checkAccess } from "../../src/rules/access.ts";

// readDecision runs per realtime stream per event, so it answers through accessOf, which builds no error for
// a refusal. All three must say what the rules say (and checkAccess still refuses with its error).
const user = (userId: string, roles: string[] = []): Principal => ({ kind: "user", userId, roles, metadata: {}, email: `${userId}@example.com`, verified: true, sessionId: "s", via: "token" });
const rules = ["public", "authenticated", "owner", "disabled", { role: "staff" }] as const;
const principals: [string, Principal][] = [
  ["admin", ADMIN],
  ["anonymous", ANONYMOUS],
  ["owner", user("u1")],
  ["other user", user("u2")],
  ["staff", user("u3", ["staff"])],
];
const ops: Operation[] = ["read", "create", "update", "delete"];

/** The rules as SPEC 2.2 states them: admin passes all; public all; disabled none; then a signed-in user is needed. */
function specified(rule: (typeof rules)[number], p: Principal): "all" | "own" | "refused" {
  if (p.kind === "admin" || rule === "public") return "all";
  if (rule === "disabled" || p.kind !== "user") return "refused";
  if (rule === "authenticated") return "all";
  if (rule === "owner") return "own";
  return p.roles.includes(rule.role) ? "all" : "refused";
}

test("checkAccess, accessOf and readDecision answer as the rules say, for every rule, operation and principal", () => {
  const record = { _id: "r1", _owner_id: "u1" };
  for (const rule of rules)
    for (const op of ops)
      for (const [who, p] of principals) {
        const col = { name: "things", rules: { read: "public", create: "public", update: "public", delete: "public", [op]: rule } } as unknown as Collection;
        const where = `${JSON.stringify(rule)} ${op} ${who}`;
        const want = specified(rule, p);
        let got: string;
        try {
          got = checkAccess(col, op, p) as string;
        } catch (err) {
          expect(err).toBeInstanceOf(AppError);
          got = "refused";
        }
        expect(`${where}: ${got}`).toBe(`${where}: ${want}`);
        expect(`${where}: ${accessOf(col, op, p) ?? "refused"}`).toBe(`${where}: ${want}`);
        if (op === "read") expect(`${where}: ${readDecision(col, p, record)}`).toBe(`${where}: ${want === "all" || (want === "own" && who === "owner")}`);
      }
});

test("checkAccess still refuses with 401 for anonymous callers and 403 for a rule that denies", () => {
  const col = (rule: unknown) => ({ name: "things", rules: { read: rule, create: rule, update: rule, delete: rule } }) as unknown as Collection;
  const status = (c: Collection, p: Principal) => {
    try {
      checkAccess(c, "read", p);
      return 200;
    } catch (err) {
      return (err as AppError).status;
    }
  };
  expect(status(col("authenticated"), ANONYMOUS)).toBe(401);
  expect(status(col({ role: "staff" }), ANONYMOUS)).toBe(401);
  expect(status(col({ role: "staff" }), user("u2"))).toBe(403);
  expect(status(col("disabled"), ANONYMOUS)).toBe(403);
  expect(status(col("disabled"), user("u2"))).toBe(403);
  expect(status(col("disabled"), ADMIN)).toBe(200);
});
