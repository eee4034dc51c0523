import { currentCatalog, type CatalogContext } from "../../catalog/catalog.ts";
import type { Collection, Relation } from "../../catalog/types.ts";
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

/** `catalog` without the relation `rel`: for checking the rules a relation's deletion would leave. */
export function withoutRelation(catalog: RuleCatalog, rel: Relation): RuleCatalog {
  return {
    collection: (name) => catalog.collection(name),
    relation: (c, f) => {
      const r = catalog.relation(c, f);
      return r && r.id === rel.id ? undefined : r;
    },
    collections: () => catalog.collections(),
  };
}

/** `catalog` without the collection `name` and its relations: for checking the rules its drop would leave. */
export function withoutCollection(catalog: RuleCatalog, name: string): RuleCatalog {
  const lower = name.toLowerCase();
  const gone = (n: string) => n.toLowerCase() === lower;
  return {
    collection: (n) => (gone(n) ? undefined : catalog.collection(n)),
    relation: (c, f) => {
      const r = catalog.relation(c, f);
      return r && (gone(r.from_col) || gone(r.to_col)) ? undefined : r;
    },
    *collections() {
      for (const c of catalog.collections()) if (!gone(c.name)) yield c;
    },
  };
}
