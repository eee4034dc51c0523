import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { findCollection } from "../collections/catalog.ts";
import type { Collection } from "../collections/types.ts";
import { countActiveHolders, holdersOf, linksFrom, linksTo } from "../query/junction.ts";
import { countActiveWithValue, fetchRecord, recordsWithValue, type RecordJson } from "../query/rows.ts";
import { allRelations, junctionTable, restricted, type Relation } from "../relations/catalog.ts";
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
// their change events go out; `_relation_cascades` remembers soft cascades for restore.

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** A field of another collection that holds ids of records of the deleted one. */
interface Pointer {
  rel: Relation;
  col: Collection;
  field: string;
}

/**
 * The fields that point at records of `col`: `one` relations to it, and `many` relations
 * from it (their `to_field` holds its ids) unless a `one` relation already declares that
 * same field, which then decides.
 */
async function pointersAt(ctx: AppContext, col: Collection): Promise<Pointer[]> {
  const all = await allRelations(ctx);
  const out: Pointer[] = [];
  for (const rel of all) {
    let colName: string;
    let field: string;
    if (rel.type === "one" && same(rel.to_col, col.name)) {
      colName = rel.from_col;
      field = rel.from_field;
    } else if (rel.type === "many" && same(rel.from_col, col.name) && rel.to_field) {
      const declared = all.some(
        (o) => o.type === "one" && same(o.from_col, rel.to_col) && same(o.from_field, rel.to_field!) && same(o.to_col, col.name),
      );
      if (declared) continue;
      colName = rel.to_col;
      field = rel.to_field;
    } else continue;
    const pcol = await findCollection(ctx, colName);
    const def = pcol?.fieldMap.get(field.toLowerCase());
    if (pcol && def) out.push({ rel, col: pcol, field: def.name });
  }
  return out;
}

async function remember(ctx: AppContext, cause: Collection, causeId: string, rel: Relation, kind: "record" | "link", recCol: string, recId: string, pos = 0) {
  await ctx.db.run(`INSERT INTO _relation_cascades (cause_col, cause_id, relation_id, kind, rec_col, rec_id, pos) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (cause_col, cause_id, relation_id, kind, rec_id) DO UPDATE SET rec_col = excluded.rec_col, pos = excluded.pos`, [cause.name, causeId, rel.id, kind, recCol, recId, pos]);
}

/**
 * Applies every relation's `on_delete` after `record` of `col` was deleted (`mode` soft or
 * hard), inside the same transaction (CONTRACT §6): `restrict` throws 409 while active
 * records point at it, `cascade` deletes them the same way (recursively, so chains follow)
 * and remembers soft cascades for restore, `set_null` clears their field; for many_via,
 * cascade and set_null remove the links. Must run after the row itself was deleted or
 * marked deleted, so a cycle of cascades ends.
 */
export async function onRecordDelete(ctx: AppContext, col: Collection, record: RecordJson, mode: "soft" | "hard", p: Principal): Promise<void> {
  const rels = await allRelations(ctx);
  if (!rels.length) return;
  const id = record._id as string;
  for (const ptr of await pointersAt(ctx, col)) {
    const { rel } = ptr;
    if (rel.on_delete === "restrict") {
      const n = await countActiveWithValue(ctx, ptr.col.name, ptr.field, id);
      if (n > 0) throw restricted(n, ptr.col.name, ptr.field);
    } else if (rel.on_delete === "set_null") {
      // Soft-deleted holders too: their field is cleared like the active ones', through their update hooks.
      for (const rec of await recordsWithValue(ctx, ptr.col, ptr.field, id, false)) {
        const fresh = await fetchRecord(ctx, ptr.col, rec._id as string);
        if (fresh && fresh[ptr.field] === id) await setFieldNull(ctx, ptr.col, fresh, ptr.field, p);
      }
    } else {
      for (const rec of await recordsWithValue(ctx, ptr.col, ptr.field, id, mode === "soft")) {
        // Read again: an earlier cascade of this same delete may have got there first.
        const fresh = await fetchRecord(ctx, ptr.col, rec._id as string);
        if (!fresh) continue;
        if (mode === "hard") {
          await removeRecord(ctx, ptr.col, fresh, p, relationEffects);
        } else if (fresh._deleted_at === null) {
          await softDeleteRecord(ctx, ptr.col, fresh, p, relationEffects);
          await remember(ctx, col, id, rel, "record", ptr.col.name, rec._id as string);
        }
      }
    }
  }
  for (const rel of rels) {
    if (rel.type !== "many_via") continue;
    const j = junctionTable(rel);
    if (same(rel.to_col, col.name)) {
      const from = await findCollection(ctx, rel.from_col);
      if (!from) continue;
      if (rel.on_delete === "restrict") {
        const n = await countActiveHolders(ctx, j, from.name, id);
        if (n > 0) throw restricted(n, from.name, rel.from_field);
      }
      if (mode === "soft" && rel.on_delete === "cascade") {
        const links = await linksTo(ctx, j, id);
        for (const l of links) await remember(ctx, col, id, rel, "link", from.name, l.from_id, l.pos);
      }
      // restrict keeps the links of soft-deleted holders, so restoring both brings them back
      if (mode === "hard" || rel.on_delete !== "restrict") await unlinkHolders(ctx, from, rel, id, p);
    }
    if (mode === "hard" && same(rel.from_col, col.name)) await dropLinksFrom(ctx, j, id);
  }
  if (mode === "hard") await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?", [col.name, id]);
}

/** Removes every many_via link to `id`, holder by holder, each through the store (update hooks, event). */
async function unlinkHolders(ctx: AppContext, from: Collection, rel: Relation, id: string, p: Principal): Promise<void> {
  const j = junctionTable(rel);
  for (const { from_id } of await holdersOf(ctx, j, id)) {
    const next = (await linksFrom(ctx, j, from_id)).filter((l) => l.to_id !== id).map((l) => l.to_id);
    await relinkRecord(ctx, from, from_id, { field: rel.from_field, next }, p, { junction: j, remove: id });
  }
  // Links whose holder row is gone (nothing to update) go too.
  await dropLinksTo(ctx, j, id);
}

/** Puts back one many_via link a cascade removed, if its holder still exists and lacks it. */
async function relinkHolder(ctx: AppContext, holder: Collection, rel: Relation, holderId: string, id: string, pos: number, p: Principal): Promise<void> {
  const j = junctionTable(rel);
  const links = await linksFrom(ctx, j, holderId);
  if (links.some((l) => l.to_id === id)) return;
  const next = [...links, { to_id: id, pos }].sort((a, b) => a.pos - b.pos).map((l) => l.to_id);
  await relinkRecord(ctx, holder, holderId, { field: rel.from_field, next }, p, { junction: j, add: id, order: next });
}

/**
 * After `id` of `col` was restored: restores what its cascade soft-deleted (records, and
 * their own cascades in turn) and puts back the many_via links its cascade removed.
 */
export async function onRecordRestore(ctx: AppContext, col: Collection, id: string, p: Principal): Promise<void> {
  // A record restored by hand no longer waits for the record whose cascade deleted it.
  await ctx.db.run("DELETE FROM _relation_cascades WHERE kind = 'record' AND rec_col = ? AND rec_id = ?", [col.name, id]);
  const rows = await ctx.db.all<{ relation_id: string; kind: string; rec_col: string; rec_id: string; pos: number }>(`SELECT relation_id, kind, rec_col, rec_id, pos FROM _relation_cascades WHERE cause_col = ? AND cause_id = ? ORDER BY ${ctx.db.sql.insertOrder}`, [col.name, id]);
  if (!rows.length) return;
  await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?", [col.name, id]);
  const rels = await allRelations(ctx);
  for (const row of rows) {
    const target = await findCollection(ctx, row.rec_col);
    if (!target) continue;
    if (row.kind === "record") {
      const rec = await fetchRecord(ctx, target, row.rec_id);
      if (rec && rec._deleted_at !== null) await restoreRecordRow(ctx, target, rec, p, relationEffects);
    } else {
      const rel = rels.find((r) => r.id === row.relation_id);
      if (!rel) continue;
      await relinkHolder(ctx, target, rel, row.rec_id, id, row.pos, p);
    }
  }
}

/** The relations' side of deleting and restoring a record, handed to the record store. */
export const relationEffects: RelationEffects = { deleted: onRecordDelete, restored: onRecordRestore };
