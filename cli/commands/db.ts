import type { Command } from "commander";
import { existsSync } from "node:fs";
import { loadConfig, storageFrom } from "../../src/config.ts";
import { copyFilesTo } from "../../src/files/copy.ts";
import { closeContext, createContext, openContext } from "../../src/app-context.ts";
import { assertTargetEmpty, copyDatabase } from "../../src/ops/copy.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { AppError } from "../../src/errors.ts";
import { isInteractive, withSpinner } from "../prompts.ts";
import { UsageError, globalsOf, output, table, unreachable } from "../run.ts";

/** `baas db copy --to postgres://…`. */
export function registerDb(program: Command): void {
  const db = program
    .command("db")
    .description("move the data of a data directory to PostgreSQL")
    .addHelpText("after", "\nExample:\n  $ baas db copy --data ./baas_data --to postgres://baas:secret@db.internal:5432/baas");

  db.command("copy")
    .description("copy the data directory's SQLite database into an empty PostgreSQL database")
    .requiredOption("--to <url>", "the PostgreSQL database to fill: postgres://user:password@host:port/database (it must be empty)")
    .option("--storage-to <url>", "also copy the uploaded files there: s3://bucket/prefix or a folder")
    .addHelpText(
      "after",
      `
Copies everything: collections (tables, fields, indexes, full-text search), records, relations and
their junction tables, users, sessions, API keys, 2FA secrets and recovery codes, OAuth accounts,
settings, and the keys (JWT signing key, admin secret hash), so tokens, sessions and API keys
issued before keep working. With --storage-to, the uploaded files (from --storage, STORAGE_URL or
<data>/storage) are copied there too. The source is --data (DATA_DIR), never DATABASE_URL. The target is
migrated first and written in one transaction: a failed copy leaves it empty. A target with any
table or row of its own is refused. Stop the server first: writes to the data directory wait
until the copy is done. Prints the row count of every table on both sides (--json: { ok, tables }).

Example:
  $ baas db copy --data ./baas_data --to postgres://baas:secret@db.internal:5432/baas
  $ baas serve --database postgres://baas:secret@db.internal:5432/baas`,
    )
    .action(async (opts: { to: string; storageTo?: string }, cmd: Command) => {
      // A copy loops over every row: the normal JIT policy (the executable starts with it held back, see serve).
      Bun.unsafe.setJITPolicy(1);
      const { data, database } = globalsOf(cmd);
      if (database) throw new UsageError("db copy reads --data and writes --to; --database does not apply");
      // The source is the data directory's SQLite file whatever DATABASE_URL says.
      const sourceConfig = loadConfig({ data, storage: globalsOf(cmd).storage }, { ...process.env, DATABASE_URL: undefined });
      const filesTo = opts.storageTo === undefined ? null : storageFrom(opts.storageTo, sourceConfig.dataDir, process.env);
      if (filesTo && !opts.storageTo!.trim()) throw new UsageError("--storage-to needs s3://bucket/prefix or a folder");
      const targetConfig = loadConfig({ data, database: opts.to });
      if (targetConfig.database.engine !== "postgres") throw new UsageError("--to must be a postgres:// URL (postgres://user:password@host:port/database)");
      if (!existsSync(sourceConfig.dbPath)) throw new AppError(404, "not_found", `no baas database at ${sourceConfig.dbPath}`);
      // Checked before the target is migrated, so a database that holds something else is left untouched.
      const probe = openPostgres({ url: targetConfig.database.url, poolSize: 1 });
      try {
        await assertTargetEmpty(probe);
      } catch (err) {
        throw unreachable(targetConfig, err);
      } finally {
        await probe.close();
      }
      const target = await openContext(targetConfig).catch((err) => {
        throw unreachable(targetConfig, err);
      });
      try {
        const source = createContext(sourceConfig, { log: target.log });
        try {
          const spin = isInteractive() && !globalsOf(cmd).json;
          const copied = await withSpinner(spin, "Copying into PostgreSQL", () => copyDatabase(source, target));
          // Files (CONTRACT §14): copied to --storage-to when given.
          const files = filesTo ? await withSpinner(spin, "Copying files", () => copyFilesTo(source, filesTo)) : null;
          const res = files === null ? copied : { ...copied, files };
          output(cmd, res, () => {
            const rows = copied.tables.reduce((n, t) => n + t.target, 0);
            return `${table(["TABLE", "SOURCE ROWS", "TARGET ROWS"], copied.tables.map((t) => [t.table, t.source, t.target]))}\ncopied ${copied.tables.length} tables, ${rows} rows${files === null ? "" : `, ${files} files`}`;
          });
        } finally {
          await closeContext(source);
        }
      } finally {
        await closeContext(target);
      }
    });
}
