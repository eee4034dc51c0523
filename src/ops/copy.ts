import { collectionFromRow, reloadCatalog } from "../catalog/catalog.ts";
import { addColumn, createCollectionTable, createIndex, createJunctionTable } from "../collections/ddl.ts";
import type { Collection } from "../catalog/types.ts";
import type { AppContext } from "../context.ts";
import type { SqlValue } from "../db/engine.ts";
import { checkCopyEngines, copyRows, sourceHasTable, systemTablesInOrder, assertTargetEmpty, type CopiedTable, type CopyProgress } from "../db/transfer.ts";
import { junctionTable } from "../catalog/types.ts";
import { enableFts } from "../search/fts.ts";

// `baas db copy --to postgres://…` (CONTRACT §11): the whole SQLite database of a data directory into an
// empty PostgreSQL database, in one transaction on each side (a consistent snapshot read, one commit).
// System tables are copied as they are (db/transfer.ts); collections, their indexes, many_via junction
// tables and full-text indexes are made by the same DDL functions and services the server uses, then filled.

export { assertTargetEmpty, type CopiedTable, type CopyProgress };

export interface CopyResult {
  ok: true;
  tables: CopiedTable[];
}

/**
 * Copies everything of `source` (a SQLite context) into `target` (a migrated, empty PostgreSQL
 * context). The source is read in one transaction (writers of the data directory wait meanwhile) and the
 * target written in one: a failure leaves the target as it was. 409 when the target is not empty.
 */
export async function copyDatabase(source: AppContext, target: AppContext, opts: { onProgress?: CopyProgress } = {}): Promise<CopyResult> {
  checkCopyEngines(source.db, target.db);
  const sdb = source.db;
  const tdb = target.db;
  return await sdb.transaction(() =>
    tdb.transaction(async () => {
      await assertTargetEmpty(tdb);
      const systemTables = await systemTablesInOrder(tdb);
      const tables: CopiedTable[] = [];
      const fts: Collection[] = [];
      for (const table of systemTables) {
        if (!(await sourceHasTable(sdb, table))) continue;
        // A full-text index is made again on the target by the search service, after the rows are in.
        const rewrite =
          table === "_collections"
            ? (r: Record<string, SqlValue>) => {
                const col = collectionFromRow(r as never);
                if (col.fts.enabled) {
                  fts.push(col);
                  r.fts = JSON.stringify({ enabled: false, fields: [] });
                }
              }
            : undefined;
        tables.push(await copyRows(sdb, tdb, table, opts.onProgress, rewrite));
      }
      const collections = (await sdb.all<Record<string, unknown>>("SELECT * FROM _collections ORDER BY name")).map((r) => collectionFromRow(r as never));
      for (const col of collections) {
        await createCollectionTable(tdb, col.name);
        for (const f of col.fields) await addColumn(tdb, col.name, f.name, f.type);
        tables.push(await copyRows(sdb, tdb, col.name, opts.onProgress));
        // Indexes are built once over the copied rows, faster than kept up row by row.
        for (const idx of col.indexes) await createIndex(tdb, col.name, idx.name, idx.fields, idx.unique);
      }
      const manyVia = await sdb.all<{ id: string }>("SELECT id FROM _relations WHERE type = 'many_via' ORDER BY id");
      for (const rel of manyVia) {
        const table = junctionTable(rel);
        await createJunctionTable(tdb, table);
        tables.push(await copyRows(sdb, tdb, table, opts.onProgress));
      }
      if (fts.length) {
        await reloadCatalog(target);
        for (const col of fts) {
          await enableFts(target, col.name);
          // Enabling stamps the collection as changed now: it keeps the time it had.
          await tdb.run("UPDATE _collections SET updated_at = ? WHERE name = ?", [col.updatedAt, col.name]);
        }
      }
      const short = tables.find((t) => t.source !== t.target);
      if (short) throw new Error(`table "${short.table}": ${short.source} rows read, ${short.target} written; nothing was copied`);
      return { ok: true as const, tables };
    }),
  );
}
