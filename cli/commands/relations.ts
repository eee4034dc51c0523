import { Option, type Command } from "commander";
import { createRelation, deleteRelation, listRelations } from "../../src/collections/relations.ts";
import { ON_DELETE, RELATION_TYPES, type Relation } from "../../src/catalog/types.ts";
import { relationCreate } from "../../src/http/shared-checks.ts";
import { UsageError, keyValues, output, serviceAction, table, when, withContext } from "../run.ts";

function showRelation(r: Relation): string {
  return keyValues({ ...r, to_field: r.to_field ?? "-", created_at: when(r.created_at) });
}

/** `baas relations create|list|delete`: the same service functions as /admin/relations. */
export function registerRelations(program: Command): void {
  const group = program
    .command("relations")
    .description("link collections: one (a field holds an id), many (the records pointing back), many_via (an array of ids)")
    .addHelpText(
      "after",
      `
Examples:
  $ baas relations create posts.author users_profiles --type one --on-delete cascade
  $ baas relations create users_profiles.posts posts --type many --to-field author
  $ baas relations create posts.tags tags --type many_via --on-delete set_null
  $ baas relations list --json
  $ baas relations delete 01HZX3…`,
    );

  group
    .command("create <from_col.from_field> <to_col>")
    .description("create a relation from <from_col>.<from_field> to <to_col>")
    .addOption(new Option("--type <type>", "one | many | many_via").choices(RELATION_TYPES).makeOptionMandatory())
    .option("--to-field <field>", "for many: the field of <to_col> holding this record's id (default: the one relation back)")
    .addOption(new Option("--on-delete <action>", "when the target record is deleted (default restrict)").choices(ON_DELETE))
    .addHelpText(
      "after",
      `
Examples:
  $ baas relations create comments.post posts --type one --on-delete cascade
  $ baas relations create posts.comments comments --type many
  $ baas relations create posts.tags tags --type many_via`,
    )
    .action(async (from: string, toCol: string, opts: { type: string; toField?: string; onDelete?: string }, cmd: Command) => {
      const dot = from.indexOf(".");
      if (dot <= 0 || dot === from.length - 1) throw new UsageError(`expected <from_col>.<from_field>, got "${from}"`);
      const body: Record<string, unknown> = { from_col: from.slice(0, dot), from_field: from.slice(dot + 1), to_col: toCol, type: opts.type };
      if (opts.toField !== undefined) body.to_field = opts.toField;
      if (opts.onDelete !== undefined) body.on_delete = opts.onDelete;
      const res = await withContext(cmd, (ctx) => createRelation(ctx, relationCreate.parse(body)));
      output(cmd, res, () => showRelation(res));
    });

  group
    .command("list")
    .description("list relations")
    .addHelpText("after", "\nExample:\n  $ baas relations list --json   # { items: [relation, ...] }")
    .action(
      serviceAction(listRelations, (res) =>
        table(
          ["ID", "FROM", "TO", "TYPE", "TO_FIELD", "ON_DELETE"],
          res.items.map((r) => [r.id, `${r.from_col}.${r.from_field}`, r.to_col, r.type, r.to_field ?? "-", r.on_delete]),
        ),
      ),
    );

  group
    .command("delete <id>")
    .description("delete a relation (the id field's values stay; a many_via junction table goes)")
    .addHelpText("after", "\nExample:\n  $ baas relations delete 01HZX3ABCDEF...")
    .action(serviceAction((ctx, [id]) => deleteRelation(ctx, id), (_res, [id]) => `deleted relation ${id}`));
}
