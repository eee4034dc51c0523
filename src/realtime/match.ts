import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import type { RecordJson } from "../query/rows.ts";
import type { FilterCond } from "../query/parse.ts";
import { planRead, resolveField, typedValue, type FieldRef, type SqlValue } from "../query/sql.ts";
import { relationCondition } from "../relations/filter.ts";
import { likeMatcher } from "./like.ts";

type Test = (v: SqlValue) => boolean;

/** One condition on a column of the record itself, tested in memory. */
interface MemoryTest {
  name: string;
  field: FieldRef;
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
}

/** A stored value as its column holds it: booleans 1/0, json as its text, undefined as NULL. */
function stored(field: FieldRef, v: unknown): SqlValue {
  if (v === undefined || v === null) return null;
  if (field.type === "boolean") return v ? 1 : 0;
  if (field.type === "json") return typeof v === "string" ? v : JSON.stringify(v);
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
  planRead(ctx, h, { filters, search: null, includeDeleted: true }, "all", p, relationCondition);
  const memory: MemoryTest[] = [];
  const virtual: FilterCond[] = [];
  for (const cond of filters) {
    const rel = h.catalog.relationOf(h.name, cond.field);
    if (rel && rel.type !== "one") virtual.push(cond);
    else {
      const field = resolveField(h.col, cond.field);
      memory.push({ name: field.name, field, test: compileTest(field, cond) });
    }
  }
  return { memory, query: virtual.length ? queryOf(virtual) : null, whole: queryOf(filters) };
}

/** Whether the record meets the filter's conditions on its own columns. */
export function meetsMemoryTests(filter: TopicFilter, record: RecordJson): boolean {
  for (const m of filter.memory) if (!m.test(stored(m.field, record[m.name]))) return false;
  return true;
}
