import { catalogView } from "../../collections/catalog.ts";
import type { Collection } from "../../collections/types.ts";
import type { AppContext } from "../../context.ts";
import { relationLookup } from "../../relations/catalog.ts";
import type { RuleCatalog } from "./check.ts";

/** The catalog as rules see it, current for this request (or this write transaction). */
export async function ruleCatalog(ctx: AppContext): Promise<RuleCatalog> {
  // The relation lookup brings the catalog view up to date first.
  const relation = await relationLookup(ctx);
  const byName = catalogView(ctx).byName;
  return {
    collection: (name) => byName.get(name.toLowerCase()),
    relation,
    collections: () => byName.values(),
  };
}

/** `catalog` with `col` in it (replacing any of that name): for checking the rules of a collection being made. */
export function withCollection(catalog: RuleCatalog, col: Collection): RuleCatalog {
  const lower = col.name.toLowerCase();
  return {
    collection: (name) => (name.toLowerCase() === lower ? col : catalog.collection(name)),
    relation: (c, f) => catalog.relation(c, f),
    *collections() {
      for (const c of catalog.collections()) if (c.name.toLowerCase() !== lower) yield c;
      yield col;
    },
  };
}
