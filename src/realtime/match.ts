import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import type { Collection } from "../catalog/types.ts";
import type { RecordJson } from "../query/rows.ts";
import type { FilterCond } from "../query/parse.ts";
import { planRead, resolveField, typedValue, type FieldRef, type SqlValue } from "../query/sql.ts";
import { relationCondition } from "../relations/filter.ts";
import { likeMatcher } from "./like.ts";

type Test = (v: SqlValue) => boolean;

/** One condition on a column of the record itself, tested in memory. */
interface MemoryTest {
  /** The field's name as the record names it. */
  name: string;
  /** The field's name when the topic was set, if it was renamed since: an event written before the rename, delivered after it, names it so. */
  was: string | null;
  field: FieldRef;
  cond: FilterCond;
  test: Test;
}

/** Conditions the database answers, with a key equal for equal conditions (so equal ones are asked once). */
export interface FilterQuery {
  filters: FilterCond[];
  key: string;
}

/**
 * A topic's filter, compiled. Conditions on the record's own columns are tested in memory on the
 * record; those on virtual relation fields (`many`, `many_via`), which live in other tables, are
 * asked of the database (fan-out.ts asks them once per event for every topic).
 */
export interface TopicFilter {
  memory: MemoryTest[];
  /** The conditions on virtual fields; null when there is none. */
  query: FilterQuery | null;
  /** Every condition, for a record held only by its id (a replayed reference): all asked of the database. */
  whole: FilterQuery;
  /** The collection entry the filter was compiled for; `followed` holds it made again for a later entry (see filterFor). */
  madeFor: Collection;
  followed?: { col: Collection; filter: TopicFilter };
}

/** A stored value as its column holds it: booleans 1/0, json as its text, undefined as NULL. */
function stored(field: FieldRef, v: unknown): SqlValue {
  if (v === undefined || v === null) return null;
  if (field.type === "boolean") return v ? 1 : 0;
  if (field.type === "json" || field.type === "file") return typeof v === "string" ? v : JSON.stringify(v);
  return v as SqlValue;
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
      const matches = likeMatcher(cond.value);
      return (v) => v !== null && matches(String(v));
    }
    case "in": {
      const items = cond.value.split(",");
      const values = new Set(items.filter((i) => i !== "null").map((i) => typedValue(field, i)));
      const withNull = values.size < items.length;
      return (v) => (v === null ? withNull : values.has(v));
    }
  }
}

const queryOf = (filters: FilterCond[]): FilterQuery => ({ filters, key: JSON.stringify(filters.map((c) => [c.field, c.op, c.value])) });

/**
 * Compiles a topic's filter conditions. Every condition is first checked exactly as a list checks
 * it (unknown field, bad operator or value: 400).
 */
export function compileFilter(ctx: AppContext, h: CollectionHandle, filters: FilterCond[], p: Principal): TopicFilter {
  planRead(ctx, h, { filters, search: null, includeDeleted: true, anyDeleted: true }, "all", p, relationCondition);
  const memory: MemoryTest[] = [];
  const virtual: FilterCond[] = [];
  for (const cond of filters) {
    const rel = h.catalog.relationOf(h.name, cond.field);
    if (rel && rel.type !== "one") virtual.push(cond);
    else {
      const field = resolveField(h.col, cond.field);
      memory.push({ name: field.name, was: null, field, cond, test: compileTest(field, cond) });
    }
  }
  return { memory, query: virtual.length ? queryOf(virtual) : null, whole: queryOf(filters), madeFor: h.col };
}

const NEVER: Test = () => false;

/**
 * The filter for the collection as it is now (`col`, the entry an event is delivered with): the one compiled
 * when the topic was set while the fields it names are unchanged; else made again (once per catalog entry),
 * each condition on its field under its current name (CONTRACT §13: filters follow a rename; the field renamed
 * from the name given, found by its earlier names, until another field takes that name) and read by the
 * field's type as it now is. A condition on a field dropped, or on a value its new type cannot hold, matches nothing.
 */
export function filterFor(filter: TopicFilter, col: Collection): TopicFilter {
  if (col === filter.madeFor) return filter;
  if (filter.followed?.col === col) return filter.followed.filter;
  const renamed = new Map<string, string>();
  const memory = filter.memory.map((m): MemoryTest => {
    if (m.name.startsWith("_")) return m;
    const key = m.cond.field.toLowerCase();
    const def = col.fieldMap.get(key) ?? col.fields.findLast((f) => f.was?.some((w) => w.toLowerCase() === key));
    if (!def) return { ...m, test: NEVER };
    renamed.set(m.cond.field, def.name);
    const was = def.name === m.field.name ? null : m.field.name;
    if (def.name === m.field.name && def.type === m.field.type) return { ...m, was, field: def };
    let test = NEVER;
    try {
      test = compileTest(def, m.cond);
    } catch {
      // The value cannot be one of the new type (400 at subscription time): no record matches.
    }
    return { ...m, name: def.name, was, field: def, test };
  });
  const whole = renamed.size ? queryOf(filter.whole.filters.map((c) => (renamed.has(c.field) ? { ...c, field: renamed.get(c.field)! } : c))) : filter.whole;
  const made: TopicFilter = { memory, query: filter.query, whole, madeFor: col };
  filter.followed = { col, filter: made };
  return made;
}

/** Whether the record meets the filter's conditions on its own columns (`filter` as filterFor gives it for the collection now). */
export function meetsMemoryTests(filter: TopicFilter, record: RecordJson): boolean {
  for (const m of filter.memory) if (!m.test(stored(m.field, m.was !== null && !(m.name in record) ? record[m.was] : record[m.name]))) return false;
  return true;
}
