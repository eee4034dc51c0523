import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { findCollection } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { badRequest } from "../errors.ts";
import { linkedRows, linksFromAll } from "../query/junction.ts";
import { pointingRows, readFilter, rowsWithIds, type TargetFilter } from "../query/relations.ts";
import { prepareRules } from "../rules/scope.ts";
import { decodeRow, type RecordJson } from "../query/rows.ts";
import { junctionTable, relationsFrom, type Relation } from "./catalog.ts";

type Row = Record<string, unknown>;

/**
 * Most target records a `many`/`many_via` expand embeds per record, and most ids a `many` field
 * lists: one record with 20,000 children must not make every read of it megabytes long.
 */
export const MAX_MANY_PER_RECORD = 100;

function idsOf(records: RecordJson[]): string[] {
  return records.map((r) => r._id as string);
}

function groupBy(rows: Row[], key: string): Map<string, Row[]> {
  const out = new Map<string, Row[]>();
  for (const r of rows) {
    const k = r[key] as string;
    delete r[key];
    const list = out.get(k);
    if (list) list.push(r);
    else out.set(k, [r]);
  }
  return out;
}

/**
 * Adds the virtual relation fields to records of `col`: a many_via field is its list of
 * linked ids; a many field the ids of the active target records the requester may read, the
 * first MAX_MANY_PER_RECORD by `_id` (null when the target's read rule hides it). One query per
 * relation for the whole page. A collection without relations is answered without a promise.
 */
export function attachRelationFields(
  ctx: AppContext,
  col: Collection,
  records: RecordJson[],
  p: Principal,
  only: Set<string> | null = null,
): RecordJson[] | Promise<RecordJson[]> {
  if (!records.length) return records;
  const rels = relationsFrom(ctx, col.name);
  if (!(rels instanceof Promise) && rels.length === 0) return records;
  return attachWith(ctx, col, records, p, only, rels);
}

async function attachWith(
  ctx: AppContext,
  col: Collection,
  records: RecordJson[],
  p: Principal,
  only: Set<string> | null,
  relations: readonly Relation[] | Promise<readonly Relation[]>,
): Promise<RecordJson[]> {
  for (const rel of await relations) {
    if (only && !only.has(rel.from_field.toLowerCase())) continue;
    if (rel.type === "many_via") {
      const rows = await linksFromAll(ctx, junctionTable(rel), idsOf(records));
      const byFrom = new Map<string, string[]>();
      for (const r of rows) {
        const list = byFrom.get(r.from_id);
        if (list) list.push(r.to_id);
        else byFrom.set(r.from_id, [r.to_id]);
      }
      for (const rec of records) rec[rel.from_field] = byFrom.get(rec._id as string) ?? [];
    } else if (rel.type === "many") {
      const target = await findCollection(ctx, rel.to_col);
      if (!target || !rel.to_field || !target.fieldMap.has(rel.to_field.toLowerCase())) {
        for (const rec of records) rec[rel.from_field] = [];
        continue;
      }
      await prepareRules(ctx, p, target);
      const filter = readFilter(target, p);
      if (!filter) {
        for (const rec of records) rec[rel.from_field] = null;
        continue;
      }
      const byFrom = groupBy(await manyRows(ctx, rel, target, records, filter, false), "__rel_from");
      for (const rec of records) rec[rel.from_field] = (byFrom.get(rec._id as string) ?? []).map((r) => r._id);
    }
  }
  return records;
}

/**
 * The readable target rows of a `many` relation for a page of records: the first MAX_MANY_PER_RECORD
 * of each record by `_id` (the rest are paged through the list API, see docs).
 */
async function manyRows(
  ctx: AppContext,
  rel: Relation,
  target: Collection,
  records: RecordJson[],
  filter: TargetFilter,
  full: boolean,
): Promise<Row[]> {
  const field = target.fieldMap.get(rel.to_field!.toLowerCase())!.name;
  return await pointingRows(ctx, target, field, idsOf(records), filter, MAX_MANY_PER_RECORD, full);
}

/** Parses `expand=a,b` (repeatable) into relations of `col`; 400 for a name that is no relation field of it. */
export function parseExpand(ctx: AppContext, col: Collection, raw: string[] | string | null | undefined): Relation[] | Promise<Relation[]> {
  // Without `expand` (most reads) the answer needs no promise.
  if (!raw || raw.length === 0) return [];
  return parseExpandList(ctx, col, raw);
}

async function parseExpandList(ctx: AppContext, col: Collection, raw: string[] | string): Promise<Relation[]> {
  const list = (Array.isArray(raw) ? raw : raw ? [raw] : [])
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.length) return [];
  const rels = await relationsFrom(ctx, col.name);
  const out: Relation[] = [];
  for (const name of list) {
    const rel = rels.find((r) => r.from_field.toLowerCase() === name.toLowerCase());
    if (!rel) throw badRequest(`cannot expand "${name.slice(0, 80)}": it is not a relation field of "${col.name}"`);
    if (!out.includes(rel)) out.push(rel);
  }
  return out;
}

/**
 * Embeds related records under `_expand` (CONTRACT §4, §6): `one` gives the target or null
 * (missing, deleted or hidden by the target's read rule), `many` and `many_via` the readable
 * active targets (at most MAX_MANY_PER_RECORD each), null when the target's read rule hides the
 * whole collection. Exactly one
 * query per expanded field for the whole page, never one per record.
 */
export function expandRecords(ctx: AppContext, col: Collection, records: RecordJson[], rels: Relation[], p: Principal): Promise<void> | undefined {
  if (!rels.length || !records.length) return;
  return expandWith(ctx, records, rels, p);
}

async function expandWith(ctx: AppContext, records: RecordJson[], rels: Relation[], p: Principal): Promise<void> {
  const out = records.map(() => ({}) as Record<string, unknown>);
  for (const rel of rels) {
    const target = await findCollection(ctx, rel.to_col);
    if (target) await prepareRules(ctx, p, target);
    const filter = target ? readFilter(target, p) : null;
    const empty = rel.type === "one" || !target || filter === null ? null : [];
    if (!target || !filter) {
      out.forEach((o) => (o[rel.from_field] = empty));
      continue;
    }
    if (rel.type === "one") {
      const ids = [...new Set(records.map((r) => r[rel.from_field]).filter((v): v is string => typeof v === "string"))];
      const byId = new Map<string, RecordJson>();
      if (ids.length) {
        const rows = await rowsWithIds(ctx, target, ids, filter);
        for (const r of rows) byId.set(r._id as string, decodeRow(target, r));
      }
      records.forEach((r, i) => (out[i][rel.from_field] = byId.get(r[rel.from_field] as string) ?? null));
    } else if (rel.type === "many") {
      if (!rel.to_field || !target.fieldMap.has(rel.to_field.toLowerCase())) {
        out.forEach((o) => (o[rel.from_field] = []));
        continue;
      }
      const byFrom = groupBy(await manyRows(ctx, rel, target, records, filter, true), "__rel_from");
      records.forEach((r, i) => (out[i][rel.from_field] = (byFrom.get(r._id as string) ?? []).map((t) => decodeRow(target, t))));
    } else {
      const tf = readFilter(target, p, "t.")!;
      // The first MAX_MANY_PER_RECORD readable linked records of each record, in link order.
      const rows = await linkedRows(ctx, junctionTable(rel), target, idsOf(records), tf, MAX_MANY_PER_RECORD);
      const byFrom = groupBy(rows, "__rel_from");
      records.forEach((r, i) => (out[i][rel.from_field] = (byFrom.get(r._id as string) ?? []).map((t) => decodeRow(target, t))));
    }
  }
  records.forEach((r, i) => (r._expand = out[i]));
}

/** How a `fields` selection meets the relation fields of a list. */
export interface RelationProjection {
  /** The stored fields to select (virtual relation fields taken out), or null for all. */
  fields: string[] | null;
  /** The virtual fields to attach (lower-cased), or null for all. */
  virtual: Set<string> | null;
  /** `one` fields selected only so that they can be expanded, removed again afterwards. */
  hidden: string[];
}

/** Splits a `fields` selection into stored and virtual relation fields, adding what `expand` needs. */
export async function relationProjection(ctx: AppContext, col: Collection, fields: string[] | null, expand: Relation[]): Promise<RelationProjection> {
  if (fields === null) return { fields: null, virtual: null, hidden: [] };
  const rels = new Map((await relationsFrom(ctx, col.name)).map((r) => [r.from_field.toLowerCase(), r]));
  const stored: string[] = [];
  const virtual = new Set<string>();
  for (const f of fields) {
    const rel = rels.get(f.toLowerCase());
    if (rel && rel.type !== "one") virtual.add(f.toLowerCase());
    else stored.push(f);
  }
  const asked = new Set(stored.map((f) => f.toLowerCase()));
  const hidden = expand.filter((r) => r.type === "one" && !asked.has(r.from_field.toLowerCase())).map((r) => r.from_field);
  return { fields: [...stored, ...hidden], virtual, hidden };
}

/** Adds the virtual relation fields and `_expand` to a page of records, then drops the helper columns. */
export async function finishRelations(
  ctx: AppContext,
  col: Collection,
  records: RecordJson[],
  projection: RelationProjection,
  expand: Relation[],
  p: Principal,
): Promise<void> {
  await attachRelationFields(ctx, col, records, p, projection.virtual);
  await expandRecords(ctx, col, records, expand, p);
  if (projection.hidden.length) for (const r of records) for (const f of projection.hidden) delete r[f];
}
