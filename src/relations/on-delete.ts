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
function pointersAt(ctx: AppContext, col: Collection): Pointer[] {
  const all = allRelations(ctx);
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
    const pcol = findCollection(ctx, colName);
    const def = pcol?.fieldMap.get(field.toLowerCase());
    if (pcol && def) out.push({ rel, col: pcol, field: def.name });
  }
  return out;
}

function pointingRecords(ctx: AppContext, ptr: Pointer, id: string, activeOnly: boolean): RecordJson[] {
  const rows = ctx.sqlite
    .query<Record<string, unknown>, [string]>(
      `SELECT ${selectList(ptr.col)} FROM ${q(ptr.col.name)} WHERE ${q(ptr.field)} = ?${activeOnly ? ` AND "_deleted_at" IS NULL` : ""} ORDER BY "_id"`,
    )
    .all(id);
  return rows.map((r) => decodeRow(ptr.col, r));
}

function remember(ctx: AppContext, cause: Collection, causeId: string, rel: Relation, kind: "record" | "link", recCol: string, recId: string, pos = 0) {
  ctx.sqlite
    .query(
      `INSERT OR REPLACE INTO _relation_cascades (cause_col, cause_id, relation_id, kind, rec_col, rec_id, pos) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(cause.name, causeId, rel.id, kind, recCol, recId, pos);
}

/**
 * Applies every relation's `on_delete` after `record` of `col` was deleted (`mode` soft or
 * hard), inside the same transaction (CONTRACT §6): `restrict` throws 409 while active
 * records point at it, `cascade` deletes them the same way (recursively, so chains follow)
 * and remembers soft cascades for restore, `set_null` clears their field; for many_via,
 * cascade and set_null remove the links. Must run after the row itself was deleted or
 * marked deleted, so a cycle of cascades ends.
 */
export function onRecordDelete(ctx: AppContext, col: Collection, record: RecordJson, mode: "soft" | "hard", p: Principal): void {
  const rels = allRelations(ctx);
  if (!rels.length) return;
  const id = record._id as string;
  for (const ptr of pointersAt(ctx, col)) {
    const { rel } = ptr;
    if (rel.on_delete === "restrict") {
      const n = ctx.sqlite
        .query<{ n: number }, [string]>(
          `SELECT COUNT(*) AS n FROM ${q(ptr.col.name)} WHERE ${q(ptr.field)} = ? AND "_deleted_at" IS NULL`,
        )
        .get(id)!.n;
      if (n > 0) throw restricted(n, ptr.col.name, ptr.field);
    } else if (rel.on_delete === "set_null") {
      // Soft-deleted holders too: their field is cleared like the active ones', through their update hooks.
      for (const rec of pointingRecords(ctx, ptr, id, false)) {
        const fresh = fetchRecord(ctx, ptr.col, rec._id as string);
        if (fresh && fresh[ptr.field] === id) setFieldNull(ctx, ptr.col, fresh, ptr.field, p);
      }
    } else {
      for (const rec of pointingRecords(ctx, ptr, id, mode === "soft")) {
        // Read again: an earlier cascade of this same delete may have got there first.
        const fresh = fetchRecord(ctx, ptr.col, rec._id as string);
        if (!fresh) continue;
        if (mode === "hard") {
          removeRecord(ctx, ptr.col, fresh, p, relationEffects);
        } else if (fresh._deleted_at === null) {
          softDeleteRecord(ctx, ptr.col, fresh, p, relationEffects);
          remember(ctx, col, id, rel, "record", ptr.col.name, rec._id as string);
        }
      }
    }
  }
  for (const rel of rels) {
    if (rel.type !== "many_via") continue;
    const j = q(junctionTable(rel));
    if (same(rel.to_col, col.name)) {
      const from = findCollection(ctx, rel.from_col);
      if (!from) continue;
      if (rel.on_delete === "restrict") {
        const n = ctx.sqlite
          .query<{ n: number }, [string]>(
            `SELECT COUNT(*) AS n FROM ${j} AS j JOIN ${q(from.name)} AS f ON f."_id" = j."from_id" WHERE j."to_id" = ? AND f."_deleted_at" IS NULL`,
          )
          .get(id)!.n;
        if (n > 0) throw restricted(n, from.name, rel.from_field);
      }
      if (mode === "soft" && rel.on_delete === "cascade") {
        const links = ctx.sqlite
          .query<{ from_id: string; pos: number }, [string]>(`SELECT "from_id", "pos" FROM ${j} WHERE "to_id" = ?`)
          .all(id);
        for (const l of links) remember(ctx, col, id, rel, "link", from.name, l.from_id, l.pos);
      }
      // restrict keeps the links of soft-deleted holders, so restoring both brings them back
      if (mode === "hard" || rel.on_delete !== "restrict") unlinkHolders(ctx, from, rel, id, p);
    }
    if (mode === "hard" && same(rel.from_col, col.name)) ctx.sqlite.query(`DELETE FROM ${j} WHERE "from_id" = ?`).run(id);
  }
  if (mode === "hard") ctx.sqlite.query("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?").run(col.name, id);
}

/** The ids a many_via holder links to, in order. */
function linkedIds(ctx: AppContext, rel: Relation, holderId: string): { to_id: string; pos: number }[] {
  return ctx.sqlite
    .query<{ to_id: string; pos: number }, [string]>(`SELECT "to_id", "pos" FROM ${q(junctionTable(rel))} WHERE "from_id" = ? ORDER BY "pos"`)
    .all(holderId);
}

/** Removes every many_via link to `id`, holder by holder, each through the store (update hooks, event). */
function unlinkHolders(ctx: AppContext, from: Collection, rel: Relation, id: string, p: Principal): void {
  const j = q(junctionTable(rel));
  const holders = ctx.sqlite
    .query<{ from_id: string }, [string]>(`SELECT "from_id" FROM ${j} WHERE "to_id" = ? ORDER BY "from_id"`)
    .all(id);
  for (const { from_id } of holders) {
    const next = linkedIds(ctx, rel, from_id).filter((l) => l.to_id !== id).map((l) => l.to_id);
    relinkRecord(ctx, from, from_id, { field: rel.from_field, next }, p, () =>
      ctx.sqlite.query(`DELETE FROM ${j} WHERE "from_id" = ? AND "to_id" = ?`).run(from_id, id),
    );
  }
  // Links whose holder row is gone (nothing to update) go too.
  ctx.sqlite.query(`DELETE FROM ${j} WHERE "to_id" = ?`).run(id);
}

/** Puts back one many_via link a cascade removed, if its holder still exists and lacks it. */
function relinkHolder(ctx: AppContext, holder: Collection, rel: Relation, holderId: string, id: string, pos: number, p: Principal): void {
  const links = linkedIds(ctx, rel, holderId);
  if (links.some((l) => l.to_id === id)) return;
  const next = [...links, { to_id: id, pos }].sort((a, b) => a.pos - b.pos).map((l) => l.to_id);
  relinkRecord(ctx, holder, holderId, { field: rel.from_field, next }, p, () =>
    ctx.sqlite.query(`INSERT OR IGNORE INTO ${q(junctionTable(rel))} ("from_id", "to_id", "pos") VALUES (?, ?, ?)`).run(holderId, id, pos),
  );
}

/**
 * After `id` of `col` was restored: restores what its cascade soft-deleted (records, and
 * their own cascades in turn) and puts back the many_via links its cascade removed.
 */
export function onRecordRestore(ctx: AppContext, col: Collection, id: string, p: Principal): void {
  // A record restored by hand no longer waits for the record whose cascade deleted it.
  ctx.sqlite.query("DELETE FROM _relation_cascades WHERE kind = 'record' AND rec_col = ? AND rec_id = ?").run(col.name, id);
  const rows = ctx.sqlite
    .query<{ relation_id: string; kind: string; rec_col: string; rec_id: string; pos: number }, [string, string]>(
      "SELECT relation_id, kind, rec_col, rec_id, pos FROM _relation_cascades WHERE cause_col = ? AND cause_id = ? ORDER BY rowid",
    )
    .all(col.name, id);
  if (!rows.length) return;
  ctx.sqlite.query("DELETE FROM _relation_cascades WHERE cause_col = ? AND cause_id = ?").run(col.name, id);
  const rels = allRelations(ctx);
  for (const row of rows) {
    const target = findCollection(ctx, row.rec_col);
    if (!target) continue;
    if (row.kind === "record") {
      const rec = fetchRecord(ctx, target, row.rec_id);
      if (rec && rec._deleted_at !== null) restoreRecordRow(ctx, target, rec, p, relationEffects);
    } else {
      const rel = rels.find((r) => r.id === row.relation_id);
      if (!rel) continue;
      relinkHolder(ctx, target, rel, row.rec_id, id, row.pos, p);
    }
  }
}

/** The relations' side of deleting and restoring a record, handed to the record store. */
export const relationEffects: RelationEffects = { deleted: onRecordDelete, restored: onRecordRestore };
