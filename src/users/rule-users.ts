import type { AppContext } from "../context.ts";
import { listParam } from "../db/condition.ts";
import type { RuleAuth } from "../rules/expr/compile.ts";

/** A stored JSON text read as `T`, or `fallback` where it is not one. */
function parsed<T>(text: string, fallback: T, ok: (v: unknown) => boolean): T {
  try {
    const v: unknown = JSON.parse(text);
    return ok(v) ? (v as T) : fallback;
  } catch {
    return fallback;
  }
}

/**
 * The users with these ids as expression rules see them (CONTRACT §12): e-mail, verification, roles and
 * metadata as stored now, not as the token carries them; one query for all. A user who is gone is missing.
 */
export async function readRuleUsers(ctx: AppContext, ids: readonly string[]): Promise<Map<string, RuleAuth>> {
  const out = new Map<string, RuleAuth>();
  if (!ids.length) return out;
  const rows = await ctx.db.all<{ id: string; email: string; is_verified: number | boolean; roles: string; metadata: string }>(
    `SELECT id, email, is_verified, roles, metadata FROM _users WHERE id ${ctx.db.sql.inList}`,
    [listParam([...ids])],
  );
  for (const r of rows) {
    const roles = parsed<unknown[]>(r.roles, [], Array.isArray).filter((x): x is string => typeof x === "string");
    const metadata = parsed<Record<string, unknown>>(r.metadata, {}, (v) => !!v && typeof v === "object" && !Array.isArray(v));
    out.set(r.id, { id: r.id, email: r.email, verified: !!r.is_verified, roles, metadata });
  }
  return out;
}
