import type { Dialect } from "../db/dialect.ts";
import { notFound } from "../errors.ts";
import type { HookModule } from "../hooks/types.ts";
import type { CollectionHandle } from "./handle.ts";
import type { Collection, Relation } from "./types.ts";

const NONE: readonly Relation[] = Object.freeze([]);

const key = (name: string) => String(name).toLowerCase();

/**
 * The collections and relations as read together at one moment (`_collections` and `_relations`), with
 * the handles made from them. Never changed once made: a catalog change is a new snapshot. Lookups by
 * name ignore case, as the collections' tables and fields do.
 */
export class CatalogSnapshot {
  private readonly fromCol = new Map<string, Relation[]>();
  private readonly toCol = new Map<string, Relation[]>();
  private readonly byField = new Map<string, Relation>();
  private readonly handles = new Map<string, CollectionHandle>();
  /** Each handle as a settled promise, made once: what a request awaits when the catalog is current. */
  private readonly settled = new Map<string, Promise<CollectionHandle>>();
  private sorted: Collection[] | undefined;

  constructor(
    /** By lower-cased name. */
    readonly byName: ReadonlyMap<string, Collection>,
    /** Every relation, in creation order (a shared array: do not change it). */
    readonly relations: readonly Relation[],
    private readonly hooks: readonly HookModule[],
    private readonly sql: Dialect,
  ) {
    for (const r of relations) {
      const from = key(r.from_col);
      const list = this.fromCol.get(from);
      if (list) list.push(r);
      else this.fromCol.set(from, [r]);
      const to = key(r.to_col);
      const back = this.toCol.get(to);
      if (back) back.push(r);
      else this.toCol.set(to, [r]);
      const field = `${from}\0${key(r.from_field)}`;
      if (!this.byField.has(field)) this.byField.set(field, r);
    }
  }

  /** The collection of that name, if any. */
  get(name: string): Collection | undefined {
    return this.byName.get(key(name));
  }

  /** Every collection, by name. */
  list(): readonly Collection[] {
    return (this.sorted ??= [...this.byName.values()].sort((a, b) => a.name.localeCompare(b.name)));
  }

  /** The relations declared on fields of `col`. */
  relationsFrom(col: string): readonly Relation[] {
    return this.fromCol.get(key(col)) ?? NONE;
  }

  /** The relations whose target is `col`. */
  relationsTo(col: string): readonly Relation[] {
    return this.toCol.get(key(col)) ?? NONE;
  }

  /** The relation declared on `col.field`, if any. */
  relationOf(col: string, field: string): Relation | undefined {
    return this.byField.get(`${key(col)}\0${key(field)}`);
  }

  /** The handle of the collection of that name, or undefined when there is none. */
  handle(name: string): CollectionHandle | undefined {
    const k = key(name);
    const made = this.handles.get(k);
    if (made) return made;
    const col = this.byName.get(k);
    if (!col) return undefined;
    const handle: CollectionHandle = {
      name: col.name,
      col,
      from: this.fromCol.get(k) ?? NONE,
      to: this.toCol.get(k) ?? NONE,
      hooks: this.hooks.filter((h) => h.collection === "*" || key(h.collection) === k),
      sql: this.sql,
      catalog: this,
    };
    this.handles.set(k, handle);
    return handle;
  }

  /** The handle of that name, or 404. */
  require(name: string): CollectionHandle {
    const h = this.handle(name);
    if (!h) throw notFound(`collection "${name}" not found`);
    return h;
  }

  /** `require` as a promise, settled once per collection and snapshot (a lookup of a current catalog allocates nothing). */
  resolved(name: string): Promise<CollectionHandle> {
    const k = key(name);
    const done = this.settled.get(k);
    if (done) return done;
    const h = this.handle(name);
    if (!h) return Promise.reject(notFound(`collection "${name}" not found`));
    const p = Promise.resolve(h);
    this.settled.set(k, p);
    return p;
  }
}
