import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import type { CatalogSnapshot } from "../catalog/snapshot.ts";
import type { Relation } from "../catalog/types.ts";
import type { FieldError } from "../errors.ts";
import { idsMeeting, readFilter } from "../query/relations.ts";
import { prepareRules } from "../rules/scope.ts";

/** What a create or update body means for the relations of its collection. */
export interface RelationWrite {
  /** The body without virtual fields (many, many_via): what may become columns. */
  stored: Record<string, unknown>;
  /**
   * 422 errors: a `one` value or a `many_via` id naming no active record the writer may read, a
   * `many_via` value that is no id list.
   */
  errors: FieldError[];
  /** many_via fields present in the body: the new id list (null clears it). */
  links: { rel: Relation; ids: string[] }[];
}

const MAX_LINKS = 10_000;

/** What a body means for a collection without relations: every field is stored as given. */
export function withoutRelations(data: Record<string, unknown>): RelationWrite {
  return { stored: data, errors: [], links: [] };
}

/**
 * Splits a create/update body into stored fields and relation links, and checks that every
 * `one` value and `many_via` id names an active record of the target collection that the
 * writer `p` may read (CONTRACT §6, §8c). Runs inside the caller's transaction, so records
 * written earlier in the same bulk or batch count. A caller skips it for a collection without
 * relations (`h.from` empty: see withoutRelations).
 */
export async function prepareRelations(ctx: AppContext, h: CollectionHandle, data: Record<string, unknown>, p: Principal): Promise<RelationWrite> {
  const rels = h.from;
  if (!rels.length) return withoutRelations(data);
  const stored = { ...data };
  const errors: FieldError[] = [];
  const links: RelationWrite["links"] = [];
  // SECURITY: a relation field under its own spelling only, as any other field (grow.ts): under another letter
  // case a rule's `@request.body.<field>` would not see it, and `"tags"` beside `"Tags"` would be stored unchecked.
  const byName = new Map(rels.map((r) => [r.from_field.toLowerCase(), r.from_field]));
  for (const k of Object.keys(data)) {
    const name = byName.get(k.toLowerCase());
    if (name === undefined || name === k) continue;
    errors.push({ field: k, rule: "name", message: `"${k}" conflicts with the field "${name}".` });
    delete stored[k];
  }
  for (const rel of rels) {
    const key = rel.from_field;
    if (!Object.hasOwn(data, key)) continue;
    const value = data[key];
    if (rel.type === "many") {
      delete stored[key]; // read only: ignored like a system field
      continue;
    }
    if (rel.type === "one") {
      if (typeof value !== "string") continue; // null clears; another type is the type check's 422
      if ((await missingIds(ctx, h.catalog, rel, [value], p)).length)
        errors.push({ field: key, rule: "relation", message: `"${key}" must name an existing record of "${rel.to_col}".` });
      continue;
    }
    delete stored[key];
    if (value === null) {
      links.push({ rel, ids: [] });
      continue;
    }
    if (!Array.isArray(value) || value.length > MAX_LINKS || value.some((v) => typeof v !== "string")) {
      errors.push({ field: key, rule: "type", message: `"${key}" must be an array of record ids.` });
      continue;
    }
    const ids = [...new Set(value as string[])];
    const missing = await missingIds(ctx, h.catalog, rel, ids, p);
    if (missing.length) {
      const shown = missing.slice(0, 5).map((m) => JSON.stringify(m.slice(0, 64)));
      errors.push({
        field: key,
        rule: "relation",
        message: `"${key}" must name existing records of "${rel.to_col}"; not found: ${shown.join(", ")}${missing.length > 5 ? ", …" : ""}.`,
      });
      continue;
    }
    links.push({ rel, ids });
  }
  return { stored, errors, links };
}

/**
 * The ids among `ids` that name no active record of the relation's target collection readable
 * by `p` (one query). IMPORTANT: a hidden record answers like a missing one, else a write would
 * reveal that it exists (and, with `restrict`, let anyone block its deletion).
 */
async function missingIds(ctx: AppContext, catalog: CatalogSnapshot, rel: Relation, ids: string[], p: Principal): Promise<string[]> {
  if (!ids.length) return [];
  prepareRules(catalog);
  const target = catalog.get(rel.to_col);
  const visible = target && readFilter(target, p);
  if (!target || !visible) return ids;
  const found = await idsMeeting(ctx, target, ids, visible);
  return ids.filter((id) => !found.has(id));
}
