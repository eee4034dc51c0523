import type { Command } from "commander";
import { applySchema, exportSchema, type Change, type SchemaJson } from "../../src/collections/schema.ts";
import { confirm, isInteractive } from "../prompts.ts";
import { addUrlOption, withTarget, type RemoteOptions } from "../remote.ts";
import { output, parseJsonArg, table } from "../run.ts";

type Plan = { changes: Change[]; applied: boolean };

/** A plan as a table of its changes. */
export function showPlan(plan: Plan): string {
  if (!plan.changes.length) return "no changes: the database matches the schema";
  const rows = table(["ACTION", "TARGET", "DETAIL"], plan.changes.map((c) => [c.action, c.target, c.detail]));
  const n = plan.changes.length;
  return `${rows}\n${plan.applied ? `applied ${n} change${n === 1 ? "" : "s"}` : `${n} change${n === 1 ? "" : "s"} (dry run: nothing was changed)`}`;
}

/** An exported schema as the file `schema apply` takes, with or without --json (CONTRACT §13: the same JSON). */
function showSchema(s: SchemaJson): string {
  return JSON.stringify(s, null, 2);
}

/** `baas schema export|apply`: the same service functions as GET /admin/schema and POST /admin/schema/apply. */
export function registerSchema(program: Command): void {
  const group = program
    .command("schema")
    .description("export the schema (collections, fields, rules, indexes, full text, relations) as JSON, or make a database match such a file")
    .addHelpText(
      "after",
      `
The file is what 'baas schema export' prints. Applying it creates what is missing, changes what
differs (a field with "renamed_from": "<old name>" is renamed, a field of another type converts every value
or nothing changes), and drops what the file lacks only with --prune. All or nothing; applying the same
file again changes nothing.

Examples:
  $ baas schema export > schema.json
  $ baas schema apply schema.json --dry-run
  $ baas schema apply schema.json --yes
  $ ADMIN_SECRET=... baas schema apply schema.json --yes --url https://api.example.com`,
    );

  addUrlOption(group.command("export").description("print the schema as JSON: the file 'schema apply' takes"))
    .addHelpText("after", "\nExample:\n  $ baas schema export > schema.json")
    .action(async (opts: RemoteOptions, cmd: Command) => {
      const res = await withTarget(cmd, opts, (t) => t.call("GET", "/schema", undefined, (ctx) => exportSchema(ctx)));
      output(cmd, res, () => showSchema(res));
    });

  addUrlOption(
    group
      .command("apply <file>")
      .description("make the database match the schema file: prints the plan; asks on a terminal unless --yes")
      .option("--dry-run", "make and check every change, then roll it back: print what would change")
      .option("--prune", "also drop the collections, fields, indexes and relations the file lacks (their data is lost)")
      .option("-y, --yes", "do not ask for confirmation on a terminal (without one, nothing is asked)"),
  )
    .addHelpText(
      "after",
      `
Exit codes: 0 when every change was made (or, with --dry-run, would be), 1 when one fails (then nothing
was changed), 2 for a bad file.

Examples:
  $ baas schema apply schema.json --dry-run
  $ baas schema apply schema.json --yes --json
  $ baas schema apply schema.json --prune --yes`,
    )
    .action(async (file: string, opts: RemoteOptions & { dryRun?: boolean; prune?: boolean; yes?: boolean }, cmd: Command) => {
      const schema = parseJsonArg(`@${file}`);
      const prune = !!opts.prune;
      const res = await withTarget(cmd, opts, async (t) => {
        const apply = (dryRun: boolean) =>
          t.call<Plan>("POST", "/schema/apply", { schema, dry_run: dryRun, prune }, (ctx) => applySchema(ctx, { schema, dry_run: dryRun, prune }));
        if (opts.dryRun) return await apply(true);
        // Without --yes it asks on a terminal (CONTRACT §13); a script's run is its own confirmation.
        if (!opts.yes && isInteractive()) {
          const plan = await apply(true);
          if (!plan.changes.length) return plan;
          process.stdout.write(showPlan(plan) + "\n");
          const drops = plan.changes.filter((c) => c.action.startsWith("drop_")).length;
          const ok = await confirm(`Apply these ${plan.changes.length} changes${drops ? ` (${drops} drop data or schema)` : ""}${t.url ? ` to ${t.url}` : ""}?`);
          if (!ok) throw new Error("cancelled, nothing changed");
        }
        return await apply(false);
      });
      output(cmd, res, () => showPlan(res));
    });
}
