import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import type { Collection } from "../collections/types.ts";
import type { RecordJson } from "../query/rows.ts";
import type { FilterCond } from "../query/parse.ts";
import { planHasRecord } from "../query/read.ts";
import { planRead, resolveField, typedValue, type FieldRef, type SqlValue } from "../query/sql.ts";
import { relationOfField } from "../relations/catalog.ts";
import { relationFilter } from "../relations/filter.ts";

/** Decides whether a record (as stored after a change) matches a topic's filter. */
export type RecordMatcher = (ctx: AppContext, col: Collection, record: RecordJson, p: Principal) => Promise<boolean>;

type Test = (v: SqlValue) => boolean;

/** A stored value as its column holds it: booleans 1/0, json as its text, undefined as NULL. */
function stored(field: FieldRef, v: unknown): SqlValue {
  if (v === undefined || v === null) return null;
  if (field.type === "boolean") return v ? 1 : 0;
  if (field.type === "json") return typeof v === "string" ? v : JSON.stringify(v);
  return v as SqlValue;
}

/** ASCII letters lower-cased, every other character as it is: the case LIKE ignores (SQLite's, PostgreSQL's ILIKE in the C locale). */
const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (run) => run.toLowerCase());

/** SQLite's LIKE: `%` any run, `_` one character; test it on `asciiLower` of the value. */
function likeRegExp(pattern: string): RegExp {
  let re = "";
  for (const ch of asciiLower(pattern)) {
    if (ch === "%") re += "[\\s\\S]*";
    else if (ch === "_") re += "[\\s\\S]";
    else re += ch.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "u");
}

/** One condition as an in-memory test with the SQL semantics of query/sql.ts (NULL compares as unknown). */
function compileTest(field: FieldRef, cond: FilterCond): Test {
  const isNull = cond.value === "null";
  switch (cond.op) {
    case "eq": {
      if (isNull) return (v) => v === null;
      const want = typedValue(field, cond.value);
      return (v) => v !== null && v === want;
    }
    case "ne": {
      if (isNull) return (v) => v !== null;
      const want = typedValue(field, cond.value);
      return (v) => v !== want;
    }
    case "gt":
    case "lt":
    case "gte":
    case "lte": {
      const want = typedValue(field, cond.value)!;
      const op = cond.op;
      return (v) => {
        if (v === null || typeof v !== typeof want) return false;
        return op === "gt" ? v > want : op === "lt" ? v < want : op === "gte" ? v >= want : v <= want;
      };
    }
    case "like": {
      const re = likeRegExp(cond.value.includes("%") ? cond.value : `%${cond.value}%`);
      return (v) => v !== null && re.test(asciiLower(String(v)));
    }
    case "in": {
      const items = cond.value.split(",");
      const values = new Set(items.filter((i) => i !== "null").map((i) => typedValue(field, i)));
      const withNull = values.size < items.length;
      return (v) => (v === null ? withNull : values.has(v));
    }
  }
}

/**
 * Compiles a topic's filter conditions. Conditions on plain columns are tested in memory on the
 * record; those on virtual relation fields (`many`, `many_via`), which live in other tables, are
 * asked of the database for that one record. Every condition is first checked exactly as a list
 * checks it (unknown field, bad operator or value: 400).
 */
export async function compileMatcher(ctx: AppContext, col: Collection, filters: FilterCond[], p: Principal): Promise<RecordMatcher> {
  planRead(ctx, col, { filters, search: null, includeDeleted: true }, "all", p, await relationFilter(ctx));
  const memory: MemoryTest[] = [];
  const virtual: FilterCond[] = [];
  for (const cond of filters) {
    const rel = await relationOfField(ctx, col.name, cond.field);
    if (rel && rel.type !== "one") virtual.push(cond);
    else {
      const field = resolveField(col, cond.field);
      memory.push({ name: field.name, was: null, field, cond, test: compileTest(field, cond) });
    }
  }
  // The tests as made for the collection entry `madeFor`; an entry loaded since (a field renamed or retyped) makes them again.
  let madeFor = col;
  let tests = memory;
  return async (ctx, current, record, who) => {
    if (current !== madeFor) {
      tests = memory.map((m) => followField(current, m));
      madeFor = current;
    }
    for (const m of tests) if (!m.test(stored(m.field, m.was !== null && !(m.name in record) ? record[m.was] : record[m.name]))) return false;
    if (!virtual.length) return true;
    try {
      const plan = planRead(ctx, current, { filters: virtual, search: null, includeDeleted: true }, "all", who, await relationFilter(ctx));
      return await planHasRecord(ctx, plan, record._id as string);
    } catch {
      // The field or relation went away since the topic was set: nothing matches it any more.
      return false;
    }
  };
}

/** A condition tested in memory on the field `name` (as the record names it). */
interface MemoryTest {
  name: string;
  /** The field's name when the topic was set, if it was renamed since: an event written before the rename, delivered after it, names it so. */
  was: string | null;
  field: FieldRef;
  cond: FilterCond;
  test: Test;
}

const NEVER: Test = () => false;

/**
 * A topic's test (made when the topic was set) for the collection as it is now: the field under its name, else
 * the field renamed from it (CONTRACT §13: filters follow a rename), its condition read by the field's type as
 * it now is. A field dropped, or a value its new type cannot hold, matches nothing.
 */
function followField(current: Collection, m: MemoryTest): MemoryTest {
  if (m.name.startsWith("_")) return m;
  const key = m.name.toLowerCase();
  const def = current.fieldMap.get(key) ?? current.fields.findLast((f) => f.was?.some((w) => w.toLowerCase() === key));
  if (!def) return { ...m, test: NEVER };
  const was = def.name === m.name ? null : m.name;
  if (def.name === m.field.name && def.type === m.field.type) return { ...m, name: def.name, was, field: def };
  let test = NEVER;
  try {
    test = compileTest(def, m.cond);
  } catch {
    // The value cannot be one of the new type (400 at subscription time): no record matches.
  }
  return { ...m, name: def.name, was, field: def, test };
}
