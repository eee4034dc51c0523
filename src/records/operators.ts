import type { CollectionHandle } from "../catalog/handle.ts";
import type { FieldDef } from "../catalog/types.ts";
import { badRequest, ValidationError, type FieldError } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";

/**
 * Atomic operators of a patch (CONTRACT §15): `"n+": 5` / `"n-": 5` add to / subtract from a number field in
 * the UPDATE itself (`"n" = COALESCE("n", 0) + ?`, never a value computed from a read); `"tags+": x | [..]` /
 * `"tags-": x | [..]` add to / remove from a json array field or a many_via field. Field names never end in `+`
 * or `-` (they match `^[A-Za-z][A-Za-z0-9_]*$`), so such a key is always an operator.
 */

/** An addition a patch's UPDATE makes to a number column. */
export interface NumberDelta {
  def: FieldDef;
  /** What is added (negative for `-`). */
  delta: number;
}

/** A patch with its operators resolved: plain values (array operators included), and the numbers' additions. */
export interface ResolvedPatch {
  clean: Record<string, unknown>;
  deltas: NumberDelta[];
}

/** True when a patch names an operator (a key ending in `+` or `-`): the common patch is left as it is. */
export function hasOperators(body: Record<string, unknown>): boolean {
  for (const k in body) {
    const last = k.charCodeAt(k.length - 1);
    if (last === 43 || last === 45) return true; // "+" or "-"
  }
  return false;
}

const sameItem = (a: unknown, b: unknown) => a === b || (typeof a === "object" && a !== null && JSON.stringify(a) === JSON.stringify(b));

/**
 * Resolves the operators of `clean` for the record `current` (as an admin reads it, relation fields included,
 * read in the write's transaction): a number operator becomes a `NumberDelta`, an array operator the field's new
 * array (the transaction holds the row: SQLite writes one transaction at a time, PostgreSQL's serializable
 * transactions retry a write that raced another). 400 for an operator beside a plain value of the same field (or
 * both operators of one field); 422 for an unknown field, a field of another type, or a value of the wrong type.
 */
export function resolveOperators(h: CollectionHandle, clean: Record<string, unknown>, current: RecordJson): ResolvedPatch {
  const out: Record<string, unknown> = {};
  const deltas: NumberDelta[] = [];
  const errors: FieldError[] = [];
  const seen = new Map<string, string>();
  const claim = (field: string, key: string) => {
    const lower = field.toLowerCase();
    const other = seen.get(lower);
    if (other !== undefined) throw badRequest(`"${key.slice(0, 80)}" and "${other.slice(0, 80)}" both change "${field.slice(0, 80)}"; send one of them`);
    seen.set(lower, key);
  };
  for (const key of Object.keys(clean)) {
    const last = key[key.length - 1];
    if (last !== "+" && last !== "-") {
      claim(key, key);
      out[key] = clean[key];
    }
  }
  for (const key of Object.keys(clean)) {
    const last = key[key.length - 1];
    if (last !== "+" && last !== "-") continue;
    const field = key.slice(0, -1);
    claim(field, key);
    const value = clean[key];
    const def = h.col.fieldMap.get(field.toLowerCase());
    const many = h.from.find((r) => r.type === "many_via" && r.from_field.toLowerCase() === field.toLowerCase());
    if (def?.type === "number") {
      if (typeof value !== "number" || !Number.isFinite(value)) {
        errors.push({ field: key, rule: "type", message: `"${key}" must be a number.` });
        continue;
      }
      deltas.push({ def, delta: last === "+" ? value : -value });
      continue;
    }
    if (def?.type === "json" || many) {
      const name = many ? many.from_field : def!.name;
      const stored = current[name] ?? [];
      if (!Array.isArray(stored)) {
        errors.push({ field: key, rule: "type", message: `"${name}" holds no array: "${last}" adds to or removes from arrays.` });
        continue;
      }
      const items = Array.isArray(value) ? value : [value];
      const next = last === "+" ? [...stored, ...items.filter((x) => !stored.some((s) => sameItem(s, x)))] : stored.filter((s) => !items.some((x) => sameItem(s, x)));
      out[name] = next;
      continue;
    }
    errors.push({
      field: key,
      rule: "type",
      message: def
        ? `"${def.name}" is a ${def.type} field: "${last}" applies to number, json array and many_via fields.`
        : `"${field.slice(0, 80)}" is not a field of "${h.name}".`,
    });
  }
  if (errors.length) throw new ValidationError(errors);
  return { clean: out, deltas };
}
