import type { Command } from "commander";
import { createIndexDef, dropIndexDef, listIndexes } from "../../src/collections/indexes.ts";
import { indexCreate } from "../../src/http/shared-checks.ts";
import type { IndexDef } from "../../src/catalog/types.ts";
import { disableFts, enableFts, ftsStatus, type FtsStatus } from "../../src/search/fts.ts";
import { isInteractive, withProgressBar } from "../prompts.ts";
import { globalsOf, keyValues, output, serviceAction, table, withContext } from "../run.ts";

const showIndex = (i: IndexDef) => `${i.name} (${i.fields.join(", ")})${i.unique ? " unique" : ""}`;
const showFts = (s: FtsStatus | { enabled: false }) =>
  "fields" in s ? keyValues({ enabled: s.enabled, state: s.state, fields: s.fields.join(", ") || "-", indexed_records: s.indexed_records }) : "enabled: false";

/** `baas indexes …` and `baas fts …`: the same service functions as /admin/collections/:name/indexes and /fts. */
export function registerIndexes(program: Command): void {
  const indexes = program
    .command("indexes")
    .description("create, list and drop column indexes of a collection")
    .addHelpText(
      "after",
      `
Examples:
  $ baas indexes create posts slug --unique
  $ baas indexes create posts status created_on
  $ baas indexes list posts --json
  $ baas indexes drop posts idx_posts_status_created_on`,
    );

  indexes
    .command("create <collection> <field...>")
    .description("create an index over the fields (in order); --unique rejects duplicate values")
    .option("--unique", "a unique index: writes that would duplicate a value answer 409 unique_violation")
    .option("--name <name>", "the index name (default idx_<collection>_<fields>)")
    .addHelpText("after", "\nExamples:\n  $ baas indexes create users_profiles email --unique\n  $ baas indexes create posts author published_at --json")
    .action(async (collection: string, fields: string[], opts: { unique?: boolean; name?: string }, cmd: Command) => {
      const body = { fields, unique: !!opts.unique, ...(opts.name !== undefined ? { name: opts.name } : {}) };
      const res = await withContext(cmd, (ctx) => createIndexDef(ctx, collection, indexCreate.defer(body)));
      output(cmd, res, () => `created index ${showIndex(res)}`);
    });

  indexes
    .command("list <collection>")
    .description("list a collection's indexes")
    .addHelpText("after", "\nExample:\n  $ baas indexes list posts --json   # { items: [{ name, fields, unique }, ...] }")
    .action(
      serviceAction(
        (ctx, [collection]) => listIndexes(ctx, collection),
        (res) => table(["NAME", "FIELDS", "UNIQUE"], res.items.map((i) => [i.name, i.fields.join(", "), i.unique ? "yes" : "no"])),
      ),
    );

  indexes
    .command("drop <collection> <index>")
    .description("drop an index by name")
    .addHelpText("after", "\nExample:\n  $ baas indexes drop posts idx_posts_slug")
    .action(serviceAction((ctx, [collection, index]) => dropIndexDef(ctx, collection, index), (_res, [, index]) => `dropped index ${index}`));

  const fts = program
    .command("fts")
    .description("full-text search index of a collection (over every text field)")
    .addHelpText(
      "after",
      `
Examples:
  $ baas fts enable posts
  $ baas fts status posts --json   # { enabled, fields, indexed_records, state }
  $ baas fts disable posts`,
    );

  fts
    .command("enable <collection>")
    .description("build the full-text index over every text field (also text fields added later)")
    .addHelpText("after", "\nExample:\n  $ baas fts enable posts && curl 'http://localhost:8090/api/v1/posts?search=hello'")
    .action(async (collection: string, _opts: unknown, cmd: Command) => {
      const show = isInteractive() && !globalsOf(cmd).json;
      const res = await withContext(cmd, (ctx) =>
        withProgressBar(show, `Indexing ${collection}`, async (report) => {
          const { status } = await enableFts(ctx, collection, { onProgress: (p) => report(p.done, p.total) });
          return status;
        }),
      );
      output(cmd, res, () => showFts(res));
    });

  fts
    .command("status <collection>")
    .description("show whether the index is on, its fields and how many records it holds")
    .action(serviceAction((ctx, [collection]) => ftsStatus(ctx, collection), showFts));

  fts
    .command("disable <collection>")
    .description("drop the full-text index")
    .action(serviceAction((ctx, [collection]) => disableFts(ctx, collection), showFts));
}
