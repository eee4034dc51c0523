import type { Principal } from "../principal.ts";
import { AppError } from "../errors.ts";
import type { AppContext } from "../context.ts";
import type { CollectionHandle } from "../catalog/handle.ts";
import { junctionTable, type Relation } from "../catalog/types.ts";
import { countActiveHolders, holdersOf, linksFrom, linksTo } from "../query/junction.ts";
import { countActiveWithValue, fetchRecord, recordsWithValue, type RecordJson } from "../query/rows.ts";
import {
  dropLinksFrom,
  dropLinksTo,
  relinkRecord,
  removeRecord,
  restoreRecordRow,
  setFieldNull,
  softDeleteRecord,
  type RelationEffects,
} from "./store.ts";

// What a relation's on_delete does to the records and links around a deleted or restored record
// (CONTRACT §6). Every record it changes is changed through the store, so their hooks run and
// their change events go out; `_relation_cascades` remembers soft cascades for restore. The
// collections around are those of the deleted record's handle (one reading of the catalog).

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** A field of another collection that holds ids of records of the deleted one. */
interface Pointer {
  rel: Relation;
  holder: CollectionHandle;
  field: string;
}

/**
 * The fields that point at records of `h`: `one` relations to it, and `many` relations
 * from it (their `to_field` holds its ids) unless a `one` relation already declares that
 * same field, which then decides. In relation creation order.
 */
function pointersAt(h: CollectionHandle): Pointer[] {
  const all = h.catalog.relations;
  const out: Pointer[] = [];
  for (const rel of all) {
    let colName: string;
    let field: string;
    if (rel.type === "one" && same(rel.to_col, h.name)) {
      colName = rel.from_col;
      field = rel.from_field;
    } else if (rel.type === "many" && same(rel.from_col, h.name) && rel.to_field) {
      const declared = all.some(
        (o) => o.type === "one" && same(o.from_col, rel.to_col) && same(o.from_field, rel.to_field!) && same(o.to_col, h.name),
      );
      if (declared) continue;
      colName = rel.to_col;
      field = rel.to_field;
    } else continue;
    const holder = h.catalog.handle(colName);
    const def = holder?.col.fieldMap.get(field.toLowerCase());
    if (holder && def) out.push({ rel, holder, field: def.name });
  }
  return out;
}

async function remember(ctx: AppContext, cause: CollectionHandle, causeId: string, rel: Relation, kind: "record" | "link", recCol: string, recId: string, pos = 0) {
  await ctx.db.run(`INSERT INTO _relation_cascades (cause_col, cause_id, relation_id, kind, rec_col, rec_id, pos) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (cause_col, cause_id, relation_id, kind, rec_id) DO UPDATE SET rec_col = excluded.rec_col, pos = excluded.pos`, [cause.name, causeId, rel.id, kind, recCol, recId, pos]);
}

/**
 * Applies every relation's `on_delete` after `record` of `h` was deleted (`mode` soft or
 * hard), inside the same transaction (CONTRACT §6): `restrict` throws 409 while active
 * records point at it, `cascade` deletes them the same way (recursively, so chains follow)
 * and remembers soft cascades for restore, `set_null` clears their field; for many_via,
 * cascade and set_null remove the links. Must run after the row itself was deleted or
 * marked deleted, so a cycle of cascades ends.
 */
export async function onRecordDelete(ctx: AppContext, h: CollectionHandle, record: RecordJson, mode: "soft" | "hard", p: Principal): Promise<void> {
  if (!h.catalog.relations.length) return;
  const id = record._id as string;
  for (const ptr of pointersAt(h)) await applyToPointer(ctx, h, ptr, id, mode, p);
  for (const rel of h.catalog.relations) if (rel.type === "many_via") await applyToLinks(ctx, h, rel, id, mode, p);
  if (mode === "hard") await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?", [h.name, id]);
}

/** One field that holds the deleted record's id: restrict, set_null or cascade over the records holding it. */
async function applyToPointer(ctx: AppContext, h: CollectionHandle, ptr: Pointer, id: string, mode: "soft" | "hard", p: Principal): Promise<void> {
  const { rel, holder, field } = ptr;
  if (rel.on_delete === "restrict") {
    const n = await countActiveWithValue(ctx, holder.name, field, id);
    if (n > 0) throw restricted(n, holder.name, field);
  } else if (rel.on_delete === "set_null") {
    // Soft-deleted holders too: their field is cleared like the active ones', through their update hooks.
    for (const rec of await recordsWithValue(ctx, holder.col, field, id, false)) {
      const fresh = await fetchRecord(ctx, holder.col, rec._id as string);
      if (fresh && fresh[field] === id) await setFieldNull(ctx, holder, fresh, field, p);
    }
  } else {
    for (const rec of await recordsWithValue(ctx, holder.col, field, id, mode === "soft")) {
      // Read again: an earlier cascade of this same delete may have got there first.
      const fresh = await fetchRecord(ctx, holder.col, rec._id as string);
      if (!fresh) continue;
      if (mode === "hard") {
        await removeRecord(ctx, holder, fresh, p, relationEffects);
      } else if (fresh._deleted_at === null) {
        await softDeleteRecord(ctx, holder, fresh, p, relationEffects);
        await remember(ctx, h, id, rel, "record", holder.name, rec._id as string);
      }
    }
  }
}

/** One many_via relation around the deleted record: the links to it (restrict, cascade, set_null) and, on a hard delete, its own. */
async function applyToLinks(ctx: AppContext, h: CollectionHandle, rel: Relation, id: string, mode: "soft" | "hard", p: Principal): Promise<void> {
  const j = junctionTable(rel);
  if (same(rel.to_col, h.name)) {
    const from = h.catalog.handle(rel.from_col);
    if (from) {
      if (rel.on_delete === "restrict") {
        const n = await countActiveHolders(ctx, j, from.name, id);
        if (n > 0) throw restricted(n, from.name, rel.from_field);
      }
      if (mode === "soft" && rel.on_delete === "cascade") {
        const links = await linksTo(ctx, j, id);
        for (const l of links) await remember(ctx, h, id, rel, "link", from.name, l.from_id, l.pos);
      }
      // restrict keeps the links of soft-deleted holders, so restoring both brings them back
      if (mode === "hard" || rel.on_delete !== "restrict") await unlinkHolders(ctx, from, rel, id, p);
    }
  }
  if (mode === "hard" && same(rel.from_col, h.name)) await dropLinksFrom(ctx, j, id);
}

/** Removes every many_via link to `id`, holder by holder, each through the store (update hooks, event). */
async function unlinkHolders(ctx: AppContext, from: CollectionHandle, rel: Relation, id: string, p: Principal): Promise<void> {
  const j = junctionTable(rel);
  for (const { from_id } of await holdersOf(ctx, j, id)) {
    const next = (await linksFrom(ctx, j, from_id)).filter((l) => l.to_id !== id).map((l) => l.to_id);
    await relinkRecord(ctx, from, from_id, { field: rel.from_field, next }, p, { junction: j, remove: id });
  }
  // Links whose holder row is gone (nothing to update) go too.
  await dropLinksTo(ctx, j, id);
}

/** Puts back one many_via link a cascade removed, if its holder still exists and lacks it. */
async function relinkHolder(ctx: AppContext, holder: CollectionHandle, rel: Relation, holderId: string, id: string, pos: number, p: Principal): Promise<void> {
  const j = junctionTable(rel);
  const links = await linksFrom(ctx, j, holderId);
  if (links.some((l) => l.to_id === id)) return;
  const next = [...links, { to_id: id, pos }].sort((a, b) => a.pos - b.pos).map((l) => l.to_id);
  await relinkRecord(ctx, holder, holderId, { field: rel.from_field, next }, p, { junction: j, add: id, order: next });
}

/**
 * After `id` of `h` was restored: restores what its cascade soft-deleted (records, and
 * their own cascades in turn) and puts back the many_via links its cascade removed.
 */
export async function onRecordRestore(ctx: AppContext, h: CollectionHandle, id: string, p: Principal): Promise<void> {
  // A record restored by hand no longer waits for the record whose cascade deleted it.
  await ctx.db.run("DELETE FROM _relation_cascades WHERE kind = 'record' AND rec_col = ? AND rec_id = ?", [h.name, id]);
  const rows = await ctx.db.all<{ relation_id: string; kind: string; rec_col: string; rec_id: string; pos: number }>(`SELECT relation_id, kind, rec_col, rec_id, pos FROM _relation_cascades WHERE cause_col = ? AND cause_id = ? ORDER BY ${ctx.db.sql.insertOrder}`, [h.name, id]);
  if (!rows.length) return;
  await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?", [h.name, id]);
  for (const row of rows) {
    const target = h.catalog.handle(row.rec_col);
    if (!target) continue;
    if (row.kind === "record") {
      const rec = await fetchRecord(ctx, target.col, row.rec_id);
      if (rec && rec._deleted_at !== null) await restoreRecordRow(ctx, target, rec, p, relationEffects);
    } else {
      const rel = h.catalog.relations.find((r) => r.id === row.relation_id);
      if (!rel) continue;
      await relinkHolder(ctx, target, rel, row.rec_id, id, row.pos, p);
    }
  }
}

/** The relations' side of deleting and restoring a record, handed to the record store. */
export const relationEffects: RelationEffects = { deleted: onRecordDelete, restored: onRecordRestore };

/** 409 raised by `restrict`. */
export const restricted = (n: number, col: string, field: string) =>
  new AppError(
    409,
    "conflict",
    `this record cannot be deleted: ${n} active record${n === 1 ? "" : "s"} of "${col}" point${n === 1 ? "s" : ""} at it through "${field}" (on_delete restrict)`,
  );
