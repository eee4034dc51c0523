import { InvalidArgumentError, type Command } from "commander";
import { getCollectionJson, type CollectionJson } from "../../src/collections/admin.ts";
import { DECLARABLE_TYPES } from "../../src/catalog/field-types.ts";
import { addField, changeField, dropField } from "../../src/collections/fields.ts";
import { addUrlOption, withTarget, type RemoteOptions, type Target } from "../remote.ts";
import { confirmOnTerminal, output } from "../run.ts";
import { showCollection } from "./collections.ts";

const seg = encodeURIComponent;
const TYPES = DECLARABLE_TYPES.join(", ");

/** The collection, from the data directory or the server. */
const collectionOf = (t: Target, name: string) => t.call<CollectionJson>("GET", `/collections/${seg(name)}`, undefined, (ctx) => getCollectionJson(ctx, name));

/** The field as the collection holds it (letter case aside), or undefined. */
const fieldOf = (c: CollectionJson, field: string) => c.fields.find((f) => f.name.toLowerCase() === field.toLowerCase());

/** An option's whole number (its checks, such as a file field's limits, are the API's). */
function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
}

/** `baas fields add|rename|retype|drop`: the same service functions as /admin/collections/:name/fields. */
export function registerFields(program: Command): void {
  const group = program
    .command("fields")
    .description("declare a collection's fields, rename them, change their type, drop them")
    .addHelpText(
      "after",
      `
Types: ${TYPES}. A field declared is filterable, sortable, indexable and searchable at once, with no record.
A new type converts every stored value ("12" -> 12, 1 -> "1", "true"/"false" <-> boolean, any -> json) or
nothing changes (exit 1, with the number of values that would not convert).

Examples:
  $ baas fields add posts title text
  $ baas fields rename posts title headline
  $ baas fields retype posts views number --yes
  $ baas fields drop posts legacy --yes
  $ ADMIN_SECRET=... baas fields add posts slug text --url https://api.example.com`,
    );

  addUrlOption(
    group
      .command("add <collection> <name> <type>")
      .description(`declare a field (${TYPES})`)
      .option("--max-size <bytes>", "a file field: the largest file, in bytes (default 5 MiB, at most 1 GiB)", wholeNumber)
      .option("--mime <types>", "a file field: the types it takes, comma-separated (image/png,image/jpeg or image/*)")
      .option("--max-count <n>", "a file field: how many files it holds (default 1; more makes its value a list)", wholeNumber),
  )
    .addHelpText(
      "after",
      "\nExamples:\n  $ baas fields add posts published boolean --json   # the collection object\n  $ baas fields add posts cover file --max-size 2097152 --mime image/png,image/jpeg\n  $ baas fields add posts attachments file --max-count 5",
    )
    .action(async (collection: string, name: string, type: string, opts: RemoteOptions & { maxSize?: number; mime?: string; maxCount?: number }, cmd: Command) => {
      const body = {
        name,
        type,
        ...(opts.maxSize !== undefined ? { max_size: opts.maxSize } : {}),
        ...(opts.mime !== undefined ? { mime: opts.mime.split(",").map((m) => m.trim()).filter(Boolean) } : {}),
        ...(opts.maxCount !== undefined ? { max_count: opts.maxCount } : {}),
      };
      const res = await withTarget(cmd, opts, (t) => t.call("POST", `/collections/${seg(collection)}/fields`, body, (ctx) => addField(ctx, collection, body)));
      output(cmd, res, () => showCollection(res));
    });

  addUrlOption(group.command("rename <collection> <field> <new_name>").description("rename a field; field rules, indexes, full text and relations follow"))
    .addHelpText("after", "\nExample:\n  $ baas fields rename posts title headline")
    .action(async (collection: string, field: string, to: string, opts: RemoteOptions, cmd: Command) => {
      const body = { name: to };
      const res = await withTarget(cmd, opts, (t) =>
        t.call("PATCH", `/collections/${seg(collection)}/fields/${seg(field)}`, body, (ctx) => changeField(ctx, collection, field, body)),
      );
      output(cmd, res, () => showCollection(res));
    });

  addUrlOption(
    group
      .command("retype <collection> <field> <type>")
      .description(`change a field's type (${TYPES}), converting every stored value`)
      .option("-y, --yes", "do not ask for confirmation on a terminal (without one, nothing is asked)"),
  )
    .addHelpText("after", "\nExample:\n  $ baas fields retype posts views number --yes")
    .action(async (collection: string, field: string, type: string, opts: RemoteOptions & { yes?: boolean }, cmd: Command) => {
      const body = { type };
      const res = await withTarget(cmd, opts, async (t) => {
        const def = fieldOf(await collectionOf(t, collection), field);
        if (def && def.type !== type) {
          const go = await confirmOnTerminal(opts.yes, `Convert every value of ${collection}.${def.name} from ${def.type} to ${type}?`);
          if (!go) throw new Error("cancelled, nothing changed");
        }
        return await t.call("PATCH", `/collections/${seg(collection)}/fields/${seg(field)}`, body, (ctx) => changeField(ctx, collection, field, body));
      });
      output(cmd, res, () => showCollection(res));
    });

  addUrlOption(
    group
      .command("drop <collection> <field>")
      .description("drop a field with every value in it")
      .option("-y, --yes", "do not ask for confirmation on a terminal (without one, nothing is asked)"),
  )
    .addHelpText("after", "\nExample:\n  $ baas fields drop posts legacy --yes")
    .action(async (collection: string, field: string, opts: RemoteOptions & { yes?: boolean }, cmd: Command) => {
      const res = await withTarget(cmd, opts, async (t) => {
        const def = fieldOf(await collectionOf(t, collection), field);
        const name = def?.name ?? field;
        const go = await confirmOnTerminal(opts.yes, `Drop field ${collection}.${name} and every value stored in it?`);
        if (!go) throw new Error("cancelled, nothing dropped");
        return await t.call("DELETE", `/collections/${seg(collection)}/fields/${seg(field)}`, undefined, (ctx) => dropField(ctx, collection, field));
      });
      output(cmd, res, () => showCollection(res));
    });
}
