import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { junctionTable, type Collection, type Relation } from "../catalog/types.ts";
import { badRequest } from "../errors.ts";
import { linkedRows, linksFromAll } from "../query/junction.ts";
import { pointingRows, readFilter, rowsWithIds, type TargetFilter } from "../query/relations.ts";
import { prepareRules } from "../rules/scope.ts";
import { decodeRow, recordBytes, type RecordJson } from "../query/rows.ts";

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
 * Adds the virtual relation fields to records of `h`: a many_via field is its list of
 * linked ids; a many field the ids of the active target records the requester may read, the
 * first MAX_MANY_PER_RECORD by `_id` (null when the target's read rule hides it). One query per
 * relation for the whole page. Returns `records`. A caller on a hot path skips the call when
 * `h.from` is empty (nothing to add).
 */
export async function attachRelationFields(
  ctx: AppContext,
  h: CollectionHandle,
  records: RecordJson[],
  p: Principal,
  only: Set<string> | null = null,
): Promise<RecordJson[]> {
  if (!records.length) return records;
  for (const rel of h.from) {
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
      const target = h.catalog.get(rel.to_col);
      if (!target || !rel.to_field || !target.fieldMap.has(rel.to_field.toLowerCase())) {
        for (const rec of records) rec[rel.from_field] = [];
        continue;
      }
      prepareRules(h.catalog);
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

const NO_EXPAND: Relation[] = [];

/** Parses `expand=a,b` (repeatable) into relations of `h`; 400 for a name that is no relation field of it. */
export function parseExpand(h: CollectionHandle, raw: string[] | string | null | undefined): Relation[] {
  if (!raw || raw.length === 0) return NO_EXPAND;
  const list = (Array.isArray(raw) ? raw : raw ? [raw] : [])
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.length) return NO_EXPAND;
  const out: Relation[] = [];
  for (const name of list) {
    const rel = h.from.find((r) => r.from_field.toLowerCase() === name.toLowerCase());
    if (!rel) throw badRequest(`cannot expand "${name.slice(0, 80)}": it is not a relation field of "${h.name}"`);
    if (!out.includes(rel)) out.push(rel);
  }
  return out;
}

/**
 * Embeds related records under `_expand` (CONTRACT §4, §6): `one` gives the target or null
 * (missing, deleted or hidden by the target's read rule), `many` and `many_via` the readable
 * active targets (at most MAX_MANY_PER_RECORD each), null when the target's read rule hides the
 * whole collection. Exactly one query per expanded field for the whole page, never one per record.
 * A caller on a hot path skips the call when `rels` is empty.
 */
export async function expandRecords(ctx: AppContext, h: CollectionHandle, records: RecordJson[], rels: Relation[], p: Principal): Promise<void> {
  if (!rels.length || !records.length) return;
  const out = records.map(() => ({}) as Record<string, unknown>);
  for (const rel of rels) {
    prepareRules(h.catalog);
    const target = h.catalog.get(rel.to_col);
    const filter = target ? readFilter(target, p) : null;
    const empty = rel.type === "one" || !target || filter === null ? null : [];
    if (!target || !filter) {
      out.forEach((o) => (o[rel.from_field] = empty));
      continue;
    }
    // The embedded records, each as a read of its own collection returns it (its relation fields too).
    const embedded: RecordJson[] = [];
    const decode = (row: Record<string, unknown>) => {
      const rec = decodeRow(target, row);
      embedded.push(rec);
      return rec;
    };
    if (rel.type === "one") {
      const ids = [...new Set(records.map((r) => r[rel.from_field]).filter((v): v is string => typeof v === "string"))];
      const byId = new Map<string, RecordJson>();
      if (ids.length) {
        const rows = await rowsWithIds(ctx, target, ids, filter);
        for (const r of rows) byId.set(r._id as string, decode(r));
      }
      records.forEach((r, i) => (out[i][rel.from_field] = byId.get(r[rel.from_field] as string) ?? null));
    } else if (rel.type === "many") {
      if (!rel.to_field || !target.fieldMap.has(rel.to_field.toLowerCase())) {
        out.forEach((o) => (o[rel.from_field] = []));
        continue;
      }
      const byFrom = groupBy(await manyRows(ctx, rel, target, records, filter, true), "__rel_from");
      records.forEach((r, i) => (out[i][rel.from_field] = (byFrom.get(r._id as string) ?? []).map(decode)));
    } else {
      const tf = readFilter(target, p, "t.")!;
      // The first MAX_MANY_PER_RECORD readable linked records of each record, in link order.
      const rows = await linkedRows(ctx, junctionTable(rel), target, idsOf(records), tf, MAX_MANY_PER_RECORD);
      const byFrom = groupBy(rows, "__rel_from");
      records.forEach((r, i) => (out[i][rel.from_field] = (byFrom.get(r._id as string) ?? []).map(decode)));
    }
    const th = h.catalog.handle(target.name);
    if (th?.from.length && embedded.length) await attachRelationFields(ctx, th, embedded, p);
  }
  checkExpandedSize(out);
  records.forEach((r, i) => (r._expand = out[i]));
}

/**
 * The most JSON the expanded records of one answer may add. A record named by many others is read once but
 * written into the answer once per record that names it: a page of 500 records naming one 16 MiB record would be
 * 8 GB of text from one request.
 */
export const MAX_EXPANDED_BYTES = 64 * 1024 * 1024;

/** 400 when the expanded records would add more than MAX_EXPANDED_BYTES to the answer (each record's size counted once). */
function checkExpandedSize(out: Record<string, unknown>[]): void {
  const sizes = new Map<object, number>();
  let total = 0;
  const add = (r: unknown) => {
    if (!r || typeof r !== "object") return;
    let n = sizes.get(r);
    if (n === undefined) sizes.set(r, (n = recordBytes(r as RecordJson)));
    total += n;
  };
  for (const o of out) {
    for (const k in o) {
      const v = o[k];
      if (Array.isArray(v)) v.forEach(add);
      else add(v);
    }
    if (total > MAX_EXPANDED_BYTES)
      throw badRequest(`the expanded records would make the answer larger than ${MAX_EXPANDED_BYTES / 1048576} MiB: ask fewer records (limit) or expand fewer relations`);
  }
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

const ALL_FIELDS: RelationProjection = Object.freeze({ fields: null, virtual: null, hidden: [] as string[] });

/** Splits a `fields` selection into stored and virtual relation fields, adding what `expand` needs. */
export function relationProjection(h: CollectionHandle, fields: string[] | null, expand: Relation[]): RelationProjection {
  if (fields === null) return ALL_FIELDS;
  const rels = new Map(h.from.map((r) => [r.from_field.toLowerCase(), r]));
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

/**
 * Adds the virtual relation fields and `_expand` to a page of records, then drops the helper columns. A
 * caller on a hot path skips the call for a collection without relations (`h.from` empty: nothing to do).
 */
export async function finishRelations(
  ctx: AppContext,
  h: CollectionHandle,
  records: RecordJson[],
  projection: RelationProjection,
  expand: Relation[],
  p: Principal,
): Promise<void> {
  await attachRelationFields(ctx, h, records, p, projection.virtual);
  await expandRecords(ctx, h, records, expand, p);
  if (projection.hidden.length) for (const r of records) for (const f of projection.hidden) delete r[f];
}
