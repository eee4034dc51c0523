import type { AppContext } from "../context.ts";
import { fileOptions, type Collection, type FieldDef } from "../catalog/types.ts";
import { ValidationError, type FieldError } from "../errors.ts";
import { fetchRecord, type RecordJson } from "../query/rows.ts";
import { NAME_RE, fileKey, thumbKey } from "./names.ts";
import { storageOf } from "./storage.ts";

// The values of file fields as the record store sees them (CONTRACT §14): names only. A name may enter a record
// only from an upload of this process that is being written now, or by staying where it was; files that a
// committed write stops naming are deleted after the commit.

/**
 * Names uploaded and stored whose record write has not finished. IMPORTANT: only these (and the names a
 * record already holds) may be set: a client sending another record's file name in JSON would otherwise
 * point its own record at that file, and delete it with its record.
 */
const inFlight = new Set<string>();

/** Marks names just stored as usable by the write that uploaded them, until `release`. */
export function holdNames(names: readonly string[]): void {
  for (const n of names) inFlight.add(n);
}

/** Ends the hold of `holdNames`. */
export function releaseNames(names: readonly string[]): void {
  for (const n of names) inFlight.delete(n);
}

const fileFieldsOf = new WeakMap<Collection, FieldDef[]>();

/** The file fields of a collection (most have none: a write checks this first). */
export function fileFields(col: Collection): FieldDef[] {
  let f = fileFieldsOf.get(col);
  if (!f) fileFieldsOf.set(col, (f = col.fields.filter((d) => d.type === "file")));
  return f;
}

/** The names a file field's value holds. */
export function namesOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === "string");
  return [];
}

/** What a multipart body asks of one file field. */
export interface FileChange {
  /** Files sent under the field's own name: they replace what it held. */
  replace: string[] | null;
  /** Files sent under `field+`. */
  append: string[];
  /** Names sent under `field-`. */
  remove: string[];
  /** The field set to empty (a plain `field` part with an empty value, or `null`). */
  clear: boolean;
}

/** The value a file field gets from what the body asked: its names, at most max_count (else 422 rule `max`). */
export function fileFieldValue(def: FieldDef, c: FileChange, previous: RecordJson | null): string | string[] | null {
  const opts = fileOptions(def)!;
  const had = namesOf(previous?.[def.name]);
  const base = c.replace ?? (c.clear ? [] : had);
  const removed = new Set(c.remove);
  const names = [...base.filter((n) => !removed.has(n)), ...c.append];
  if (names.length > opts.max_count) {
    const message = opts.max_count === 1 ? `"${def.name}" takes one file.` : `"${def.name}" holds at most ${opts.max_count} files.`;
    throw new ValidationError([{ field: def.name, rule: "max", message }]);
  }
  if (opts.max_count === 1) return names[0] ?? null;
  return names.length ? names : null;
}

// A symbol key: no JSON body can carry it, so only a multipart update of this process sets file changes.
const FILE_CHANGES = Symbol("file changes");

/** Marks an update's body with the file changes its values came from (see filesAsStored). */
export function withFileChanges(data: Record<string, unknown>, changes: Map<FieldDef, FileChange>): Record<string, unknown> {
  Object.defineProperty(data, FILE_CHANGES, { value: changes });
  return data;
}

/**
 * The update's body with its file fields computed again on `previous`, the record as the write's transaction read
 * it: a `field+` appends to what the field holds then, not to what it held when the upload began (two uploads at
 * once each keep their file). The body as it is when it carries no file changes.
 */
export function filesAsStored(body: Record<string, unknown>, previous: RecordJson): Record<string, unknown> {
  const changes = (body as { [FILE_CHANGES]?: Map<FieldDef, FileChange> })[FILE_CHANGES];
  if (!changes) return body;
  const out = { ...body };
  for (const [def, c] of changes) out[def.name] = fileFieldValue(def, c, previous);
  return out;
}

/**
 * 422 errors for file fields of `data` whose value is not a name (or, for several files, a list of at most
 * max_count distinct names) that `previous` holds or an upload in progress stored.
 */
export function fileValueErrors(col: Collection, data: Record<string, unknown>, previous: RecordJson | null): FieldError[] {
  const errors: FieldError[] = [];
  for (const def of fileFields(col)) {
    if (!Object.hasOwn(data, def.name)) continue;
    const v = data[def.name];
    if (v === null) continue;
    const opts = fileOptions(def)!;
    const had = new Set(namesOf(previous?.[def.name]));
    const known = (n: unknown) => typeof n === "string" && NAME_RE.test(n) && (had.has(n) || inFlight.has(n));
    if (opts.max_count === 1) {
      if (!known(v)) errors.push({ field: def.name, rule: "file", message: `"${def.name}" takes a file: upload it with multipart/form-data.` });
      continue;
    }
    if (!Array.isArray(v) || !v.every(known) || new Set(v).size !== v.length)
      errors.push({ field: def.name, rule: "file", message: `"${def.name}" takes files: upload them with multipart/form-data (a list of its own names removes or reorders them).` });
    else if (v.length > opts.max_count) errors.push({ field: def.name, rule: "max", message: `"${def.name}" holds at most ${opts.max_count} files.` });
  }
  return errors;
}

/**
 * After the current transaction commits, deletes the files of `col` that `before` named and `after` (the
 * record as written; null: deleted) no longer does. The record is read again first: a name it still holds
 * (a savepoint rolled back, a write run again) is kept.
 */
export function deleteDroppedFiles(ctx: AppContext, col: Collection, before: RecordJson, after: Record<string, unknown> | null): void {
  const dropped: string[] = [];
  for (const def of fileFields(col)) {
    if (after && !Object.hasOwn(after, def.name)) continue;
    const keep = new Set(namesOf(after?.[def.name]));
    for (const n of namesOf(before[def.name])) if (!keep.has(n)) dropped.push(n);
  }
  if (!dropped.length) return;
  const id = before._id as string;
  ctx.db.afterCommit(() => {
    track(ctx, (async () => {
      const now = await fetchRecord(ctx, col, id).catch(() => undefined);
      if (now === undefined) return; // unknown: kept (storage gc removes it later if it is an orphan)
      const held = new Set(fileFields(col).flatMap((d) => namesOf(now?.[d.name])));
      await deleteFiles(ctx, col.name, dropped.filter((n) => !held.has(n)));
    })().catch((err) => ctx.log.error("deleting files after a commit failed", { collection: col.name, error: err })));
  });
}

/**
 * After the current transaction commits, deletes the files of a dropped collection (its thumbnails too): every key
 * under its folder written before `startedAt`, the wall-clock time the drop began. A collection made again under
 * the same name writes after that and keeps its own; a file written while the drop ran is left to `baas storage gc`.
 */
export function deleteCollectionFiles(ctx: AppContext, collection: string, startedAt: number): void {
  ctx.db.afterCommit(() => {
    track(ctx, (async () => {
      const storage = storageOf(ctx);
      // A bucket tells the time of a write to the second: only what is a whole second older is sure to be of the drop.
      const before = storage.kind === "s3" ? Math.floor(startedAt / 1000) * 1000 - 1000 : startedAt;
      for await (const { key, mtime } of storage.list(`${collection}/`)) if (mtime < before) await storage.delete(key);
    })().catch((err) => ctx.log.error("deleting a dropped collection's files failed", { collection, error: err })));
  });
}

const running = new WeakMap<AppContext, Set<Promise<void>>>();

function track(ctx: AppContext, p: Promise<void>): void {
  let set = running.get(ctx);
  if (!set) running.set(ctx, (set = new Set()));
  set.add(p);
  void p.finally(() => set.delete(p));
}

/** Settles when the deletions after commit started so far are done (tests, shutdown). */
export async function fileDeletionsSettled(ctx: AppContext): Promise<void> {
  while (running.get(ctx)?.size) await Promise.all(running.get(ctx)!);
}

/** Deletes stored files and their thumbnails. */
export async function deleteFiles(ctx: Pick<AppContext, "config">, collection: string, names: readonly string[]): Promise<void> {
  const storage = storageOf(ctx);
  for (const n of names) {
    if (!NAME_RE.test(n)) continue;
    await storage.delete(fileKey(collection, n));
    for await (const t of storage.list(`${thumbKey(collection, n, "")}`)) await storage.delete(t.key);
  }
}
