import type { FieldType } from "../catalog/types.ts";

// The conversion of a field's stored values when its type changes (CONTRACT §13): `"12"` → 12, 1 → `"1"`,
// `"true"`/`"false"` ↔ boolean, any value → json. Done here, on the values as the API returns them, so that both
// engines convert exactly alike (their own casts format and parse numbers differently).

/** A decimal number as a filter value reads it (query/sql.ts): optional sign, digits, fraction, exponent, blanks around. */
const NUMBER_RE = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

/** What a value becomes: `{ ok: true, value }`, or `{ ok: false }` when it has no value of the new type. */
export type Converted = { ok: true; value: unknown } | { ok: false };

const NO: Converted = { ok: false };
const yes = (value: unknown): Converted => ({ ok: true, value });

function textTo(to: FieldType, s: string): Converted {
  if (to === "text") return yes(s);
  if (to === "json") return yes(s);
  if (to === "number") {
    if (!NUMBER_RE.test(s)) return NO;
    const n = Number(s);
    return Number.isFinite(n) ? yes(n) : NO;
  }
  const lower = s.trim().toLowerCase();
  return lower === "true" ? yes(true) : lower === "false" ? yes(false) : NO;
}

function numberTo(to: FieldType, n: number): Converted {
  if (to === "number" || to === "json") return yes(n);
  if (to === "text") return yes(String(n));
  return n === 1 ? yes(true) : n === 0 ? yes(false) : NO;
}

function booleanTo(to: FieldType, b: boolean): Converted {
  if (to === "boolean" || to === "json") return yes(b);
  if (to === "text") return yes(b ? "true" : "false");
  return yes(b ? 1 : 0);
}

/**
 * A non-null value of a field of type `from`, as a read returns it (a json field's value parsed), as a value of
 * type `to`. A json value converts as a value of its own kind would (a JSON string as text, a number as a
 * number); an object or array becomes only text (its JSON) or json.
 */
export function convertValue(from: FieldType, to: FieldType, v: unknown): Converted {
  if (typeof v === "string") return textTo(to, v);
  if (typeof v === "number") return Number.isFinite(v) ? numberTo(to, v) : NO;
  if (typeof v === "boolean") return booleanTo(to, v);
  if (v === null || v === undefined) return yes(null);
  // An object or array: a json field's value.
  if (to === "json") return yes(v);
  if (to === "text") return yes(JSON.stringify(v));
  void from;
  return NO;
}

/** A stored value (as the engine returns it) as a read returns it: booleans as true/false, json parsed. */
export function storedToValue(type: FieldType, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return v === 1 || v === true || v === "1";
  if (type === "number") return typeof v === "bigint" ? Number(v) : v;
  if (type === "json" && typeof v === "string") {
    try {
      return JSON.parse(v);
    } catch {
      // Text another tool wrote that is not JSON: read as that text (as decodeRow does).
      return v;
    }
  }
  return v;
}

/** A value of type `type` as the JSON a column fill takes (DdlDialect.fillColumn): a json field's value as its JSON text. */
export function valueToFill(type: FieldType, v: unknown): string | number | boolean {
  if (type === "json") return JSON.stringify(v);
  return v as string | number | boolean;
}
