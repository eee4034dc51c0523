import type { FieldDef } from "../catalog/types.ts";

/** Converts a JSON value into what its column stores (query/rows.ts's decodeRow reads it back). */
export function encodeValue(type: FieldDef["type"], v: unknown): string | number | null {
  if (v === null || v === undefined) return null;
  if (type === "boolean") return v ? 1 : 0;
  if (type === "json") return JSON.stringify(v);
  // A file field of several files stores its list of names as JSON (query/rows.ts reads it back).
  if (type === "file" && typeof v !== "string") return JSON.stringify(v);
  return v as string | number;
}

/** The user fields of a body: system fields (anything starting with `_`) are ignored. */
export function userFields(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(body)) if (!k.startsWith("_")) out[k] = body[k];
  return out;
}

/** userFields without a copy when the body has no system field: for a caller that changes neither. */
export function userFieldsShared(body: Record<string, unknown>): Record<string, unknown> {
  for (const k in body) if (k.startsWith("_")) return userFields(body);
  return body;
}
