// CPU time of one realtime read check (readDecision: run per stream per event), allowed and refused:
// `bun bench/read-check.ts`. A refusal used to throw and catch an AppError per check.
import type { Principal } from "../src/principal.ts";
import type { Collection } from "../src/catalog/types.ts";
import { readDecision } from "../src/records/access.ts";

const col = (read: unknown) => ({ name: "chat", rules: { read, create: "authenticated", update: "owner", delete: "owner" } }) as unknown as Collection;
const anonymous: Principal = { kind: "anonymous" };
const user: Principal = { kind: "user", userId: "u1", roles: [], metadata: {}, email: "u1@example.com", verified: true, sessionId: "s", via: "token" };
const record = { _id: "x", _owner_id: "u2" };
const cases: [string, Collection, Principal][] = [
  ["anonymous stream, public rule (allowed)", col("public"), anonymous],
  ["anonymous stream, authenticated rule (refused)", col("authenticated"), anonymous],
  ["user stream without the rule's role (refused)", col({ role: "staff" }), user],
  ["user stream, owner rule, another's record (refused)", col("owner"), user],
];
for (const [name, c, p] of cases) {
  for (let i = 0; i < 100_000; i++) readDecision(c, p, record);
  const n = 1_000_000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) readDecision(c, p, record);
  const u = process.cpuUsage(t0);
  console.log(`| ${name} | ${(((u.user + u.system) / n) * 1000).toFixed(0)} ns |`);
}
