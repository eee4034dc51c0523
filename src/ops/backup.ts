import { closeSync, existsSync, openSync, readSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { AppContext } from "../context.ts";
import { AppError, badRequest } from "../errors.ts";

/**
 * Writes a consistent copy of the whole database to `file` (Engine.backupTo: SQLite's `VACUUM INTO`, which
 * reads one snapshot, so a server may keep writing meanwhile). The copy goes to a temporary file next to the
 * target and is renamed into place, so a failed backup never leaves half a file.
 */
export async function backupDatabase(ctx: AppContext, file: string, opts: { overwrite?: boolean } = {}): Promise<{ ok: true; file: string; bytes: number }> {
  const backupTo = backupFacility(ctx);
  if (!file) throw badRequest("a backup file name is required");
  const target = resolve(file);
  if (target === resolve(ctx.config.dbPath)) throw badRequest("the backup file cannot be the database itself");
  if (existsSync(target)) {
    if (!opts.overwrite) throw new AppError(409, "conflict", `${file} already exists (use --force to replace it)`);
    if (statSync(target).isDirectory()) throw badRequest(`${file} is a directory`);
  }
  if (!existsSync(dirname(target))) throw badRequest(`directory ${dirname(target)} does not exist`);
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  rmSync(tmp, { force: true });
  try {
    await backupTo(tmp);
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return { ok: true, file: target, bytes: statSync(target).size };
}

/**
 * A consistent copy of the database as a download: a backup to a temporary file in the data
 * directory, streamed and then removed (also when the client goes away mid-download).
 */
export async function backupDownload(ctx: AppContext): Promise<{ stream: ReadableStream<Uint8Array>; bytes: number; filename: string }> {
  const backupTo = backupFacility(ctx);
  const tmp = join(ctx.config.dataDir, `.backup-${process.pid}-${crypto.randomUUID()}.db`);
  try {
    await backupTo(tmp);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  const bytes = statSync(tmp).size;
  const fd = openSync(tmp, "r");
  // The open descriptor keeps the data readable; the name goes at once, so nothing is left behind.
  rmSync(tmp, { force: true });
  let closed = false;
  const close = () => {
    if (!closed) (closed = true), closeSync(fd);
  };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const buf = new Uint8Array(256 * 1024);
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) {
        close();
        controller.close();
      } else controller.enqueue(buf.subarray(0, n));
    },
    cancel: close,
  });
  const stamp = new Date(ctx.clock.now()).toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-");
  return { stream, bytes, filename: `baas-backup-${stamp}.db` };
}

/**
 * The engine's backup to a file. A backup is a copy of the SQLite file; the only engine without one,
 * PostgreSQL, has its own tool for that (CONTRACT §11).
 */
function backupFacility(ctx: AppContext): (file: string) => Promise<void> {
  const db = ctx.db;
  if (!db.backupTo)
    throw badRequest("backup copies the SQLite database; this server stores its data in PostgreSQL: use pg_dump (e.g. pg_dump --format=custom --file=baas.dump <database>)");
  return (file) => db.backupTo!(file);
}
