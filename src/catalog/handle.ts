import type { Dialect } from "../db/dialect.ts";
import type { HookModule } from "../hooks/types.ts";
import type { CatalogSnapshot } from "./snapshot.ts";
import type { Collection, Relation } from "./types.ts";

/**
 * A collection as a request (or a write transaction, at its start) resolved it, once: the catalog entry, the
 * relations from and to it, the hooks that run for it and the engine's dialect, all from one reading of the
 * catalog (`catalog`, which also answers for the other collections a relation names). Code below the
 * resolution takes the handle and computes from it without asking the catalog again; only rows are read
 * through the engine. A handle is made once per catalog reading and collection, and never changes: a schema
 * change makes a new reading, and so new handles.
 */
export interface CollectionHandle {
  /** The collection's name as stored. */
  readonly name: string;
  readonly col: Collection;
  /** The relations declared on its fields (one, many, many_via), in the order they were created. */
  readonly from: readonly Relation[];
  /** The relations whose target it is, in the order they were created. */
  readonly to: readonly Relation[];
  /** The hook files' handlers for it (its own and those for "*"), in load order. */
  readonly hooks: readonly HookModule[];
  /** How the engine spells what differs between engines. */
  readonly sql: Dialect;
  /** The reading of the catalog it was made from. */
  readonly catalog: CatalogSnapshot;
}
