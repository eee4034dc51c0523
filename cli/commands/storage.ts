import type { Command } from "commander";
import { collectGarbage, GC_GRACE_MS } from "../../src/files/gc.ts";
import { UsageError, output, withContext } from "../run.ts";

/** `baas storage gc [--dry-run]`. */
export function registerStorage(program: Command): void {
  const storage = program.command("storage").description("uploaded files: find and remove what no record names");
  storage
    .command("gc")
    .description("remove stored files that no record names (older than the grace period)")
    .option("--dry-run", "list them, remove nothing")
    .option("--grace <minutes>", `leave files younger than this alone: an upload may be in flight (default ${GC_GRACE_MS / 60000})`)
    .addHelpText(
      "after",
      `
Files whose record write never finished (a crash, a kill) or whose deletion after a commit
failed stay in storage: this finds them (files of records soft-deleted are kept) and removes them.

Examples:
  $ baas storage gc --dry-run
  $ baas storage gc --storage s3://my-bucket/baas --json   # { orphans, removed, dry_run }`,
    )
    .action(async (opts: { dryRun?: boolean; grace?: string }, cmd: Command) => {
      const grace = opts.grace === undefined ? GC_GRACE_MS : Number(opts.grace) * 60000;
      if (!Number.isFinite(grace) || grace < 0) throw new UsageError("--grace must be a number of minutes >= 0");
      const res = await withContext(cmd, (ctx) => collectGarbage(ctx, { dryRun: opts.dryRun, graceMs: grace }));
      output(cmd, res, () =>
        [...res.orphans.map((k) => (res.dry_run ? `orphan: ${k}` : `removed: ${k}`)), `${res.orphans.length} orphaned files${res.dry_run ? " (dry run: nothing removed)" : `, ${res.removed} removed`}`].join("\n"),
      );
    });
}
