import { and, checkedAlias, col, listParam, reservedAlias, type Bound, type Column, type Cond, type Operand } from "../../db/condition.ts";
import type { Engine } from "../../db/engine.ts";
import { q } from "../../db/ident.ts";
import type { CheckedRule } from "./check.ts";
import { compileRule, type RuleEnv } from "./compile.ts";

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

/**
 * The ids among `ids` of stored records of the rule's collection that the rule lets through, in one query
 * (`_id IN (...) AND <rule>`): for records known to be stored as they are, such as those a realtime batch
 * just committed.
 */
export async function idsPassing(db: Pick<Engine, "sql" | "all">, rule: CheckedRule, env: RuleEnv, ids: readonly string[]): Promise<Set<string>> {
  const cond = compileRule(rule, env);
  if (cond.k === "false" || !ids.length) return new Set();
  if (cond.k === "true") return new Set(ids);
  const params: Bound[] = [listParam([...ids])];
  const table = q(rule.collection);
  const rows = await db.all<{ _id: string }>(`SELECT ${table}."_id" FROM ${table} WHERE ${table}."_id" ${db.sql.inList} AND ${db.sql.cond(cond, params)}`, params);
  return new Set(rows.map((r) => r._id));
}

/** The alias of the set of users a condition is asked about (usersPassing), and their id as a column of it. */
const USERS = reservedAlias("u", 0);
export const USER_ID: Column = col(USERS, "value", "text");

/**
 * Which of the users `ids` meet `cond`, a condition on USER_ID (compiled by compileRuleForUsers or
 * decideRuleForUsers), in one statement however many they are.
 */
export async function usersPassing(db: Pick<Engine, "sql" | "all">, cond: Cond, ids: ReadonlySet<string>): Promise<Set<string>> {
  if (cond.k === "false" || !ids.size) return new Set();
  if (cond.k === "true") return new Set(ids);
  const asked = uncorrelated(cond);
  const found = await usersFound(db, asked, ids.size);
  if (found) {
    const passing = new Set<string>();
    for (const id of found) if (ids.has(id)) passing.add(id);
    return passing;
  }
  const params: Bound[] = [listParam([...ids])];
  const rows = await db.all<{ id: string }>(`SELECT ${USER_ID.sql} AS id FROM ${db.sql.textRows(USERS)} WHERE ${db.sql.cond(asked, params)}`, params);
  return new Set(rows.map((r) => r.id));
}

/**
 * The users `c` holds for, found without the list of users asked about, where `c` names the user only as
 * `USER_ID IN (SELECT …)` or `USER_ID = '<text>'`, under AND and OR (a room's members, a record's owner): one
 * index range instead of a lookup per user. Null where `c` is not of that shape, or where the users found are more
 * than a few times those asked about (the rule then asks over the list).
 */
export async function usersFound(db: Pick<Engine, "sql" | "all">, c: Cond, asked: number): Promise<Set<string> | null> {
  const params: Bound[] = [];
  const sql = userSetSql(db, c, params);
  if (sql === null) return null;
  const most = Math.max(1000, 4 * asked);
  params.push(most + 1);
  const rows = await db.all<{ id: unknown }>(`SELECT ${FOUND}.id FROM (${sql}) AS ${FOUND} LIMIT ?`, params);
  if (rows.length > most) return null;
  const found = new Set<string>();
  for (const r of rows) if (typeof r.id === "string") found.add(r.id);
  return found;
}

/** Aliases of the set queries of usersFound. */
const FOUND = reservedAlias("f", 0);
const KEPT = reservedAlias("k", 0);

/** The SELECT of the ids of the users `c` holds for (see usersFound), its values added to `params`; null where it cannot be said so. */
function userSetSql(db: Pick<Engine, "sql">, c: Cond, params: Bound[]): string | null {
  switch (c.k) {
    case "inRows":
      if (!isUser(c.a) || c.column.type !== "text" || namesUser(c.where)) return null;
      return `SELECT ${c.column.sql} AS id FROM ${q(c.table)} AS ${checkedAlias(c.alias)} WHERE ${db.sql.cond(c.where, params)}`;
    case "cmp": {
      const v = c.op !== "=" ? null : isUser(c.a) ? c.b : isUser(c.b) ? c.a : null;
      if (v?.k !== "val" || typeof v.v !== "string") return null;
      params.push(v.v);
      return "SELECT CAST(? AS text) AS id";
    }
    case "or": {
      const parts: string[] = [];
      for (const branch of c.of) {
        if (branch.k === "false") continue;
        const sql = userSetSql(db, branch, params);
        if (sql === null) return null;
        parts.push(sql);
      }
      return parts.length ? parts.join(" UNION ALL ") : null;
    }
    case "and": {
      // One part names the user; the others hold for all users alike, or for none.
      const naming = c.of.filter(namesUser);
      if (naming.length !== 1) return null;
      const set = userSetSql(db, naming[0]!, params);
      if (set === null) return null;
      const rest = c.of.filter((part) => part !== naming[0]);
      if (!rest.length) return set;
      return `SELECT ${KEPT}.id FROM (${set}) AS ${KEPT} WHERE ${db.sql.cond(and(rest), params)}`;
    }
    default:
      return null;
  }
}

/**
 * `cond` with each EXISTS that finds a row by the user's id (`x = USER_ID` among its conditions, none other naming
 * the user) asked as `USER_ID IN (SELECT x …)`: the rows are then found once for all users, not once per user
 * (a room's members, not a lookup per user). Only where the EXISTS is not negated: an IN over a column holding
 * nulls is unknown, not false, for a value it does not find, which a WHERE reads as false, but NOT would not.
 */
export function uncorrelated(c: Cond): Cond {
  switch (c.k) {
    case "and":
    case "or":
      return { k: c.k, of: c.of.map(uncorrelated) };
    case "exists": {
      const parts = c.where.k === "and" ? c.where.of : [c.where];
      const at = parts.findIndex((p) => p.k === "cmp" && p.op === "=" && ((isUser(p.a) && own(p.b, c.alias)) || (isUser(p.b) && own(p.a, c.alias))));
      if (at < 0) return c;
      const rest = parts.filter((_, i) => i !== at);
      if (rest.some(namesUser)) return c;
      const link = parts[at] as Extract<Cond, { k: "cmp" }>;
      const column = (isUser(link.a) ? link.b : link.a) as Column;
      return { k: "inRows", a: USER_ID, table: c.table, alias: c.alias, column, where: rest.length === 1 ? rest[0]! : { k: "and", of: rest } };
    }
    default:
      return c;
  }
}

const isUser = (o: Operand) => o.k === "col" && o.sql === USER_ID.sql;
/** A column of the EXISTS's own row (`alias."name"`). */
const own = (o: Operand, alias: string) => o.k === "col" && o.sql.startsWith(`${alias}.`);

/** Whether a condition names the user's id anywhere (then it cannot be asked once for all users). */
function namesUser(c: Cond): boolean {
  switch (c.k) {
    case "cmp":
    case "distinct":
      return isUser(c.a) || isUser(c.b);
    case "null":
    case "in":
    case "oneOf":
      return isUser(c.a);
    case "like":
      return c.a.sql === USER_ID.sql;
    case "element":
      return c.array.sql === USER_ID.sql || isUser(c.value);
    case "and":
    case "or":
      return c.of.some(namesUser);
    case "not":
      return namesUser(c.c);
    case "exists":
      return namesUser(c.where);
    case "inRows":
      return isUser(c.a) || namesUser(c.where);
    case "true":
    case "false":
    case "raw":
      return false;
  }
}
