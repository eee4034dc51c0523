import type { Command } from "commander";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { generateTypes } from "../../src/collections/typegen.ts";
import { AppError } from "../../src/errors.ts";
import { globalsOf, note, withContext } from "../run.ts";

/** `baas types`: TypeScript interfaces of the collections, for `collection<Posts>("posts")` in the client. */
export function registerTypes(program: Command): void {
  program
    .command("types")
    .description("print TypeScript interfaces of the collections (fields, system fields, relations) for the typed client")
    .option("--collection <name>", "only this collection")
    .option("--out <file>", "write to this file instead of stdout")
    .option("--hooks", "add the types of hook files: Hook, Route, a tx typed per collection, the events")
    .addHelpText(
      "after",
      `
Each collection becomes an interface named after it (posts -> Posts, user_profiles -> UserProfiles):
the system fields, every field with its type (text string, number number, boolean boolean, json an
object or array; each may be null), a one relation as the target's _id, many and many_via as arrays
of _ids, and _expand with the related records. Collections maps names to interfaces. Run it again
when fields change. --json prints { "collections": [...], "types": "<source>" }.

--hooks adds the types of hook files (tx typed per collection, each handler's event, onCommit's event,
routes). Write them into the hooks directory under a name starting with _ (not loaded as a hook) and
check a hook with satisfies:
  import type { Hook } from "./_types.ts";
  export default { collection: "orders", async beforeCreate({ data, tx }) { ... } } satisfies Hook;

Examples:
  $ baas types > src/baas-types.ts
  $ baas types --out src/baas-types.ts --data ./baas_data
  $ baas types --collection posts
  $ baas types --hooks --out baas_data/hooks/_types.ts`,
    )
    .action(async (opts: { collection?: string; out?: string; hooks?: boolean }, cmd: Command) => {
      const res = await withContext(cmd, (ctx) => generateTypes(ctx, { collection: opts.collection, hooks: opts.hooks }));
      if (opts.out !== undefined) {
        const file = resolve(opts.out);
        try {
          writeFileSync(file, res.types);
        } catch (err) {
          throw new AppError(400, "bad_request", `cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
        }
        if (globalsOf(cmd).json) process.stdout.write(JSON.stringify({ ...res, out: file }, null, 2) + "\n");
        else note(cmd, `wrote ${res.collections.length} interface${res.collections.length === 1 ? "" : "s"} to ${file}`);
        return;
      }
      process.stdout.write(globalsOf(cmd).json ? JSON.stringify(res, null, 2) + "\n" : res.types);
    });
}
