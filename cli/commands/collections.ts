import type { Command } from "commander";
import {
  collectionStats,
  createCollection,
  deleteCollection,
  getCollectionJson,
  listCollectionsJson,
  updateCollectionRules,
  type CollectionJson,
} from "../../src/collections/admin.ts";
import { UsageError, confirmDestructive, serviceAction, keyValues, output, parseJsonArg, parseRuleArg, ruleText, table, when, withContext } from "../run.ts";

type RuleFlags = { read?: unknown; create?: unknown; update?: unknown; delete?: unknown };

function rulesFrom(opts: RuleFlags): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const op of ["read", "create", "update", "delete"] as const) if (opts[op] !== undefined) out[op] = opts[op];
  return Object.keys(out).length ? out : undefined;
}

function addRuleOptions(cmd: Command): Command {
  return cmd
    .option("--read <rule>", "who may list and read records", parseRuleArg)
    .option("--create <rule>", "who may create records", parseRuleArg)
    .option("--update <rule>", "who may update records", parseRuleArg)
    .option("--delete <rule>", "who may delete and restore records", parseRuleArg);
}

/** Human rendering of a collection object. */
export function showCollection(c: CollectionJson): string {
  const rules = Object.entries(c.rules).map(([op, r]) => `${op}=${ruleText(r)}`).join(" ");
  return keyValues({
    name: c.name,
    rules,
    field_rules: c.field_rules,
    fields: c.fields.map((f) => `${f.name}:${f.type}`).join(", ") || "(none yet)",
    indexes: c.indexes.map((i) => `${i.name}(${i.fields.join(",")})${i.unique ? " unique" : ""}`).join(", ") || "(none)",
    fts: c.fts.enabled ? `enabled (${c.fts.fields.join(", ")})` : "disabled",
    created_at: when(c.created_at),
    updated_at: when(c.updated_at),
  });
}

const RULE_HELP = `
Rules: public, authenticated, owner, disabled, role:<name>, or an expression such as
  "status = 'published' || _owner_id = @auth.id" (see the Rules chapter of docs/API.md); the fields an
  expression names must exist (\`baas fields add posts status text\`, or a record that sets them).
Defaults: read=public create=authenticated update=owner delete=owner.`;

/** `baas collections …` and `baas stats`: the same service functions as /admin/collections. */
export function registerCollections(program: Command): void {
  const group = program
    .command("collections")
    .description("create, list, show, delete collections and set their rules")
    .addHelpText(
      "after",
      `${RULE_HELP}

Examples:
  $ baas collections create posts --read public --create authenticated --update owner --delete role:admin
  $ baas collections list --json
  $ baas collections show posts
  $ baas collections rules posts --read authenticated --field-rules '[{"field":"title","required":true,"min":3}]'
  $ baas collections delete posts --yes`,
    );

  addRuleOptions(group.command("create <name>").description("create a collection (its table)"))
    .addHelpText("after", `${RULE_HELP}\n\nExample:\n  $ baas collections create posts --create role:editor`)
    .action(async (name: string, opts: RuleFlags, cmd: Command) => {
      const res = await withContext(cmd, (ctx) => createCollection(ctx, { name, rules: rulesFrom(opts) }));
      output(cmd, res, () => showCollection(res));
    });

  group
    .command("list")
    .description("list collections")
    .addHelpText("after", "\nExample:\n  $ baas collections list --json   # { items: [collection, ...] }")
    .action(
      serviceAction(listCollectionsJson, (res) =>
        table(
          ["NAME", "FIELDS", "READ", "CREATE", "UPDATE", "DELETE", "FTS"],
          res.items.map((c) => [
            c.name,
            c.fields.length,
            ruleText(c.rules.read),
            ruleText(c.rules.create),
            ruleText(c.rules.update),
            ruleText(c.rules.delete),
            c.fts.enabled ? "on" : "off",
          ]),
        ),
      ),
    );

  group
    .command("show <name>")
    .description("show one collection: rules, field rules, fields, indexes, full-text state")
    .addHelpText("after", "\nExample:\n  $ baas collections show posts --json")
    .action(serviceAction((ctx, [name]) => getCollectionJson(ctx, name), showCollection));

  group
    .command("delete <name>")
    .description("drop a collection with all its records, indexes and relations")
    .option("-y, --yes", "do not ask for confirmation (required without a terminal)")
    .addHelpText("after", "\nExample:\n  $ baas collections delete posts --yes")
    .action(async (name: string, opts: { yes?: boolean }, cmd: Command) => {
      const res = await withContext(cmd, async (ctx) => {
        await getCollectionJson(ctx, name);
        const go = await confirmDestructive(
          opts.yes,
          `Delete collection "${name}" and all its records?`,
          `delete collection "${name}"`,
        );
        return go ? await deleteCollection(ctx, name) : null;
      });
      if (!res) throw new Error("cancelled, nothing deleted");
      output(cmd, res, () => `deleted collection ${name}`);
    });

  addRuleOptions(group.command("rules <name>").description("change access rules (given ones replace) and/or field rules (the list is replaced)"))
    .option("--field-rules <json|@file>", "field validation rules as a JSON array, or @file to read it", parseJsonArg)
    .addHelpText(
      "after",
      `${RULE_HELP}
Field rules: [{ "field", "required"?, "min"?, "max"?, "regex"?, "enum"? }, ...]

Examples:
  $ baas collections rules posts --update role:editor
  $ baas collections rules posts --read "status = 'published' || _owner_id = @auth.id"
  $ baas collections rules posts --field-rules '[{"field":"status","enum":["draft","published"]}]'
  $ baas collections rules posts --field-rules @rules.json`,
    )
    .action(async (name: string, opts: RuleFlags & { fieldRules?: unknown }, cmd: Command) => {
      const body: Record<string, unknown> = {};
      const rules = rulesFrom(opts);
      if (rules) body.rules = rules;
      if (opts.fieldRules !== undefined) body.field_rules = opts.fieldRules;
      if (!Object.keys(body).length) throw new UsageError("give at least one of --read, --create, --update, --delete, --field-rules");
      const res = await withContext(cmd, (ctx) => updateCollectionRules(ctx, name, body));
      output(cmd, res, () => showCollection(res));
    });

  program
    .command("stats <collection>")
    .description("record count and time of the last write of a collection")
    .addHelpText("after", "\nExample:\n  $ baas stats posts --json   # { row_count, last_write }")
    .action(serviceAction((ctx, [name]) => collectionStats(ctx, name), (res) => keyValues({ ...res, last_write: when(res.last_write) })));
}
