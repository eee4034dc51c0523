import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { findCollection } from "../collections/catalog.ts";
import { q } from "../collections/ddl.ts";
import type { Collection } from "../collections/types.ts";
import { decodeRow, fetchRecord, selectList, type RecordJson } from "../records/codec.ts";
import {
  relinkRecord,
  removeRecord,
  restoreRecordRow,
  setFieldNull,
  softDeleteRecord,
  type RelationEffects,
} from "../records/store.ts";
import { allRelations, junctionTable, restricted, type Relation } from "./catalog.ts";
import { INSERT_ORDER } from "../query/dialect.ts";

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

async function pointingRecords(ctx: AppContext, ptr: Pointer, id: string, activeOnly: boolean): Promise<RecordJson[]> {
  const rows = await ctx.db.all<Record<string, unknown>>(`SELECT ${selectList(ptr.col)} FROM ${q(ptr.col.name)} WHERE ${q(ptr.field)} = ?${activeOnly ? ` AND "_deleted_at" IS NULL` : ""} ORDER BY "_id"`, [id]);
  return rows.map((r) => decodeRow(ptr.col, r));
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
      const n = (await ctx.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q(ptr.col.name)} WHERE ${q(ptr.field)} = ? AND "_deleted_at" IS NULL`, [id]))!.n;
      if (n > 0) throw restricted(n, ptr.col.name, ptr.field);
    } else if (rel.on_delete === "set_null") {
      // Soft-deleted holders too: their field is cleared like the active ones', through their update hooks.
      for (const rec of await pointingRecords(ctx, ptr, id, false)) {
        const fresh = await fetchRecord(ctx, ptr.col, rec._id as string);
        if (fresh && fresh[ptr.field] === id) await setFieldNull(ctx, ptr.col, fresh, ptr.field, p);
      }
    } else {
      for (const rec of await pointingRecords(ctx, ptr, id, mode === "soft")) {
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
    const j = q(junctionTable(rel));
    if (same(rel.to_col, col.name)) {
      const from = await findCollection(ctx, rel.from_col);
      if (!from) continue;
      if (rel.on_delete === "restrict") {
        const n = (await ctx.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${j} AS j JOIN ${q(from.name)} AS f ON f."_id" = j."from_id" WHERE j."to_id" = ? AND f."_deleted_at" IS NULL`, [id]))!.n;
        if (n > 0) throw restricted(n, from.name, rel.from_field);
      }
      if (mode === "soft" && rel.on_delete === "cascade") {
        const links = await ctx.db.all<{ from_id: string; pos: number }>(`SELECT "from_id", "pos" FROM ${j} WHERE "to_id" = ?`, [id]);
        for (const l of links) await remember(ctx, col, id, rel, "link", from.name, l.from_id, l.pos);
      }
      // restrict keeps the links of soft-deleted holders, so restoring both brings them back
      if (mode === "hard" || rel.on_delete !== "restrict") await unlinkHolders(ctx, from, rel, id, p);
    }
    if (mode === "hard" && same(rel.from_col, col.name)) await ctx.db.run(`DELETE FROM ${j} WHERE "from_id" = ?`, [id]);
  }
  if (mode === "hard") await ctx.db.run("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?", [col.name, id]);
}

/** The ids a many_via holder links to, in order. */
async function linkedIds(ctx: AppContext, rel: Relation, holderId: string): Promise<{ to_id: string; pos: number }[]> {
  return await ctx.db.all<{ to_id: string; pos: number }>(`SELECT "to_id", "pos" FROM ${q(junctionTable(rel))} WHERE "from_id" = ? ORDER BY "pos"`, [holderId]);
}

/** Removes every many_via link to `id`, holder by holder, each through the store (update hooks, event). */
async function unlinkHolders(ctx: AppContext, from: Collection, rel: Relation, id: string, p: Principal): Promise<void> {
  const j = q(junctionTable(rel));
  const holders = await ctx.db.all<{ from_id: string }>(`SELECT "from_id" FROM ${j} WHERE "to_id" = ? ORDER BY "from_id"`, [id]);
  for (const { from_id } of holders) {
    const next = (await linkedIds(ctx, rel, from_id)).filter((l) => l.to_id !== id).map((l) => l.to_id);
    await relinkRecord(ctx, from, from_id, { field: rel.from_field, next }, p, async () =>
      await ctx.db.run(`DELETE FROM ${j} WHERE "from_id" = ? AND "to_id" = ?`, [from_id, id]),
    );
  }
  // Links whose holder row is gone (nothing to update) go too.
  await ctx.db.run(`DELETE FROM ${j} WHERE "to_id" = ?`, [id]);
}

/** Puts back one many_via link a cascade removed, if its holder still exists and lacks it. */
async function relinkHolder(ctx: AppContext, holder: Collection, rel: Relation, holderId: string, id: string, pos: number, p: Principal): Promise<void> {
  const links = await linkedIds(ctx, rel, holderId);
  if (links.some((l) => l.to_id === id)) return;
  const next = [...links, { to_id: id, pos }].sort((a, b) => a.pos - b.pos).map((l) => l.to_id);
  await relinkRecord(ctx, holder, holderId, { field: rel.from_field, next }, p, async () =>
    await ctx.db.run(`INSERT INTO ${q(junctionTable(rel))} ("from_id", "to_id", "pos") VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, [holderId, id, pos]),
  );
}

/**
 * After `id` of `col` was restored: restores what its cascade soft-deleted (records, and
 * their own cascades in turn) and puts back the many_via links its cascade removed.
 */
export async function onRecordRestore(ctx: AppContext, col: Collection, id: string, p: Principal): Promise<void> {
  // A record restored by hand no longer waits for the record whose cascade deleted it.
  await ctx.db.run("DELETE FROM _relation_cascades WHERE kind = 'record' AND rec_col = ? AND rec_id = ?", [col.name, id]);
  const rows = await ctx.db.all<{ relation_id: string; kind: string; rec_col: string; rec_id: string; pos: number }>(`SELECT relation_id, kind, rec_col, rec_id, pos FROM _relation_cascades WHERE cause_col = ? AND cause_id = ? ORDER BY ${INSERT_ORDER}`, [col.name, id]);
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
