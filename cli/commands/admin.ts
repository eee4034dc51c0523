import type { Command } from "commander";
import { rotateAdminSecret } from "../../src/auth/admin.ts";
import { backupDatabase } from "../../src/ops/backup.ts";
import { backupFiles } from "../../src/files/copy.ts";
import { isInteractive, withSpinner } from "../prompts.ts";
import { globalsOf, humanBytes, note, output, withContext } from "../run.ts";

/** `baas admin rotate-secret` and `baas backup <file>`. */
export function registerAdmin(program: Command): void {
  const admin = program
    .command("admin")
    .description("admin credentials")
    .addHelpText("after", "\nExample:\n  $ baas admin rotate-secret --data ./baas_data");

  admin
    .command("rotate-secret")
    .description("make a new admin secret and print it once; the old secret and every admin token stop working at once")
    .addHelpText(
      "after",
      `
The new secret is the only line on stdout (--json: { "secret": "..." }); only its hash is stored.
A server running on the same data directory accepts only the new secret from its next request.
While ADMIN_SECRET is set (here, or for the server last started on this data directory) it is the
secret, and this command refuses: change ADMIN_SECRET and restart the server instead.

Example:
  $ NEW=$(baas admin rotate-secret)`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const secret = await withContext(cmd, (ctx) => rotateAdminSecret(ctx));
      note(cmd, "New admin secret (shown once, store it now). The old secret and all admin tokens no longer work.");
      output(cmd, { secret }, () => secret);
    });

  program
    .command("backup <file>")
    .description("write a consistent copy of the database to <file> (safe while a server runs)")
    .option("--force", "replace <file> if it exists")
    .addHelpText(
      "after",
      `
The copy is made with SQLite's VACUUM INTO: one consistent snapshot, compacted.
Uploaded files are copied beside it, into the folder <file>.storage/ (whatever the storage).
Restore by stopping the server and putting the file in place of <data>/baas.db (and the
folder's content in place of <data>/storage/, or into your bucket).

Examples:
  $ baas backup backups/baas-$(date +%F).db
  $ baas backup /tmp/copy.db --json   # { ok, file, bytes }`,
    )
    .action(async (file: string, opts: { force?: boolean }, cmd: Command) => {
      const spin = isInteractive() && !globalsOf(cmd).json;
      const res = await withContext(cmd, (ctx) =>
        withSpinner(spin, `Backing up to ${file}`, async () => {
          const db = await backupDatabase(ctx, file, { overwrite: opts.force });
          // Files (CONTRACT §14): beside the database, in <file>.storage/.
          const files = await backupFiles(ctx, `${db.file}.storage`);
          return { ...db, files };
        }),
      );
      output(cmd, res, () => `backup written: ${res.file} (${humanBytes(res.bytes)}), ${res.files} files in ${res.file}.storage/`);
    });
}
