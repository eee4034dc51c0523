import { currentCatalog, type CatalogContext } from "../../catalog/catalog.ts";
import type { Collection } from "../../catalog/types.ts";
import type { RuleCatalog } from "./check.ts";

/** The catalog as rules see it, current for this request (or this write transaction). */
export async function ruleCatalog(ctx: CatalogContext): Promise<RuleCatalog> {
  const snap = await currentCatalog(ctx);
  return {
    collection: (name) => snap.get(name),
    relation: (col, field) => snap.relationOf(col, field),
    collections: () => snap.byName.values(),
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
