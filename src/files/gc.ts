import type { AppContext } from "../context.ts";
import { listCollections } from "../catalog/catalog.ts";
import { q } from "../db/ident.ts";
import { NAME_RE } from "./names.ts";
import { storageOf, type FileStorage } from "./storage.ts";
import { fileFields, namesOf } from "./values.ts";

// `baas storage gc`: files that no record names (a crash between the upload and the record's write, a
// deletion after commit that failed, a dropped collection) are found and removed. Files younger than the
// grace period are left alone: their record may be being written now.

/** Default grace period: an hour. */
export const GC_GRACE_MS = 60 * 60 * 1000;

export interface GcResult {
  /** The keys found orphaned (removed unless dry_run). */
  orphans: string[];
  removed: number;
  dry_run: boolean;
}

/** Finds (and unless `dryRun` removes) stored files no record names, older than `graceMs`. */
export async function collectGarbage(ctx: AppContext, opts: { dryRun?: boolean; graceMs?: number } = {}): Promise<GcResult> {
  const storage: FileStorage = storageOf(ctx);
  const before = ctx.clock.now() - (opts.graceMs ?? GC_GRACE_MS);
  // Every name each collection's records hold (soft-deleted records keep theirs).
  const held = new Map<string, Set<string>>();
  for (const col of await listCollections(ctx)) {
    const fields = fileFields(col);
    const names = new Set<string>();
    if (fields.length) {
      const rows = await ctx.db.all<Record<string, unknown>>(`SELECT ${fields.map((f) => q(f.name)).join(", ")} FROM ${q(col.name)}`);
      for (const r of rows)
        for (const f of fields) {
          const v = r[f.name];
          for (const n of namesOf(typeof v === "string" && v.startsWith("[") ? JSON.parse(v) : v)) names.add(n);
        }
    }
    held.set(col.name, names);
  }
  const orphans: string[] = [];
  for await (const { key, mtime } of storage.list("")) {
    if (mtime > before) continue;
    const parts = key.split("/");
    const names = held.get(parts[0]!);
    let orphan: boolean;
    if (key.endsWith(".partial")) orphan = true;
    else if (parts.length === 2) orphan = !names || !NAME_RE.test(parts[1]!) || !names.has(parts[1]!);
    else if (parts.length === 4 && parts[1] === "thumbs") orphan = !names || !names.has(parts[2]!);
    else orphan = false; // not a key of ours: left alone
    if (orphan) orphans.push(key);
  }
  let removed = 0;
  if (!opts.dryRun)
    for (const key of orphans) {
      await storage.delete(key);
      removed++;
    }
  return { orphans, removed, dry_run: !!opts.dryRun };
}
