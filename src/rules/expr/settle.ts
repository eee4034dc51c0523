import type { Bound, Cond } from "../../db/condition.ts";
import type { Engine } from "../../db/engine.ts";

// The parts of rule decisions only the database can give (relation paths, `@exists` over records in memory:
// compile.ts decideRule), asked in as few statements as possible: one SELECT of one row whose columns are the
// conditions, `CASE WHEN <condition> THEN 1 ELSE 0 END`, so a batch of records and readers costs one round trip.

/** Most conditions, and most bound values, in one statement. */
const MAX_CONDITIONS = 100;
const MAX_PARAMS = 10_000;

/** Each decision as a boolean: those already decided as they are, the conditions asked of the database. */
export async function settleDecisions(db: Pick<Engine, "sql" | "get">, decisions: readonly (boolean | Cond)[]): Promise<boolean[]> {
  const out = decisions.map((d) => d === true);
  let parts: string[] = [];
  let at: number[] = [];
  let params: Bound[] = [];
  const flush = async () => {
    if (!parts.length) return;
    const row = await db.get<Record<string, number>>(`SELECT ${parts.join(", ")}`, params);
    at.forEach((i, n) => (out[i] = row?.[`r${n}`] === 1));
    parts = [];
    at = [];
    params = [];
  };
  for (let i = 0; i < decisions.length; i++) {
    const d = decisions[i]!;
    if (typeof d === "boolean") continue;
    const own: Bound[] = [];
    const sql = db.sql.cond(d, own);
    if (parts.length >= MAX_CONDITIONS || (parts.length && params.length + own.length > MAX_PARAMS)) await flush();
    parts.push(`CASE WHEN ${sql} THEN 1 ELSE 0 END AS "r${parts.length}"`);
    at.push(i);
    params.push(...own);
  }
  await flush();
  return out;
}
