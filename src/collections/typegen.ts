import type { AppContext } from "../context.ts";
import { currentCatalog } from "../catalog/catalog.ts";
import { fileOptions, type Collection, type FieldType, type Relation } from "../catalog/types.ts";

/** The TypeScript type of each stored field type, as the data API returns it (a field never set is null). */
const TS_TYPES: Record<FieldType, string> = {
  text: "string",
  number: "number",
  boolean: "boolean",
  json: "{ [key: string]: unknown } | unknown[]",
  // A file name; a field of several files (max_count > 1) is typed string[] (fieldTsType).
  file: "string",
};

/** A record of a collection that is not generated (when only some collections are asked for). */
const ANY_RECORD = "{ _id: string; [field: string]: unknown }";

const SYSTEM_LINES = [
  "  _id: string;",
  "  _created_at: number;",
  "  _updated_at: number;",
  "  /** The user who created the record; null when created anonymously or by the admin. */",
  "  _owner_id: string | null;",
  "  /** Set when the record is soft-deleted. */",
  "  _deleted_at: number | null;",
];

/** `user_profiles` → `UserProfiles`. Names are unique case-insensitively, but `a_b` and `aB` still meet: numbered. */
function interfaceNames(cols: readonly Collection[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const c of cols) {
    const base = c.name
      .split("_")
      .filter(Boolean)
      .map((p) => p[0].toUpperCase() + p.slice(1))
      .join("");
    let name = base;
    for (let i = 2; taken.has(name) || name === "Collections"; i++) name = `${base}${i}`;
    taken.add(name);
    names.set(c.name.toLowerCase(), name);
  }
  return names;
}

/**
 * The type of a record embedded by `expand`: the target's interface without its virtual relation
 * fields and `_expand`, which embedded records do not carry.
 */
function expandedType(col: string, rels: readonly Relation[], names: Map<string, string>): string {
  const name = names.get(col.toLowerCase());
  if (!name) return ANY_RECORD;
  const own = rels.filter((r) => r.from_col.toLowerCase() === col.toLowerCase());
  if (own.length === 0) return name;
  const omitted = [...own.filter((r) => r.type !== "one").map((r) => r.from_field), "_expand"];
  return `Omit<${name}, ${omitted.map((f) => JSON.stringify(f)).join(" | ")}>`;
}

function renderCollection(c: Collection, rels: readonly Relation[], names: Map<string, string>): string {
  const lines = [`/** Records of the collection "${c.name}". */`, `export interface ${names.get(c.name.toLowerCase())} {`, ...SYSTEM_LINES];
  const own = rels.filter((r) => r.from_col.toLowerCase() === c.name.toLowerCase());
  const relOf = (field: string) => own.find((r) => r.from_field.toLowerCase() === field.toLowerCase());
  const target = (r: Relation) => expandedType(r.to_col, rels, names);
  for (const f of c.fields) {
    const rel = relOf(f.name);
    if (rel && rel.type !== "one") continue; // virtual: rendered below
    if (rel) lines.push(`  /** The _id of a record of "${rel.to_col}" (relation one). */`);
    lines.push(`  ${f.name}: ${(fileOptions(f)?.max_count ?? 1) > 1 ? "string[]" : TS_TYPES[f.type]} | null;`);
  }
  for (const r of own) {
    if (r.type === "many") {
      lines.push(`  /** The _ids of the "${r.to_col}" records whose "${r.to_field}" names this one (relation many; null when hidden from the reader). */`);
      lines.push(`  ${r.from_field}: string[] | null;`);
    } else if (r.type === "many_via") {
      lines.push(`  /** The _ids of linked "${r.to_col}" records (relation many_via). */`);
      lines.push(`  ${r.from_field}: string[];`);
    }
  }
  if (own.length > 0) {
    lines.push("  /** Related records, with `expand`. */");
    lines.push("  _expand?: {");
    for (const r of own) lines.push(`    ${r.from_field}?: ${r.type === "one" ? `${target(r)} | null` : `${target(r)}[] | null`};`);
    lines.push("  };");
  }
  lines.push("}");
  return lines.join("\n");
}

/**
 * The types of hook files (CONTRACT §15) over the generated `Collections`: `tx` typed per collection, the event
 * of each handler, `onCommit`'s event, and routes. A hook file checks its export with `satisfies Hook` (or
 * `Route[]`); see docs/API.md, *Types for hook files*.
 */
const HOOK_TYPES = `// ---- Hook files: \`export default { ... } satisfies Hook\`, \`export const routes = [ ... ] satisfies Route[]\`.

/** The name of a generated collection. */
export type CollectionName = keyof Collections;

type SystemField = "_id" | "_created_at" | "_updated_at" | "_owner_id" | "_deleted_at" | "_expand";

/**
 * What a write may send for a collection: any of its fields (none required), and the atomic operators
 * (\`"stock-": 1\`, \`"tags+": "x"\`) and fields the collection does not declare yet, untyped.
 */
export type WriteData<C extends CollectionName> = { [K in Exclude<keyof Collections[C], SystemField>]?: Collections[C][K] } & {
  [key: string]: unknown;
};

/** What \`tx.list\` takes: the data API's query language, as values instead of a query string. */
export interface ListOptions {
  /** \`field:op:value\`, one or several (ANDed). */
  filter?: string | string[];
  /** \`field\`, \`-field\` or \`field:desc\`, one or several. */
  sort?: string | string[];
  /** 1..500, default 50. */
  limit?: number;
  /** The \`_id\` of the last record of the previous page. */
  after?: string;
  include_deleted?: boolean;
}

/** The handle on the transaction a hook or a route runs in: admin rights, the data API's checks, hooks and events. */
export interface Tx {
  /** The record, or null when there is none (or it is soft-deleted). */
  get<C extends CollectionName>(collection: C, id: string): Promise<Collections[C] | null>;
  /** A page of records, as \`GET /:collection\` answers its \`items\`. */
  list<C extends CollectionName>(collection: C, opts?: ListOptions): Promise<Collections[C][]>;
  create<C extends CollectionName>(collection: C, data: WriteData<C>): Promise<Collections[C]>;
  /** Only the given fields change; a missing record rejects with 404. */
  update<C extends CollectionName>(collection: C, id: string, data: WriteData<C>): Promise<Collections[C]>;
  /** Removes the row (as the admin's hard delete). */
  delete<C extends CollectionName>(collection: C, id: string, opts: { hard: true }): Promise<{ ok: true; id: string }>;
  /** A soft delete (as \`DELETE /:collection/:id\`). */
  delete<C extends CollectionName>(collection: C, id: string, opts?: { hard?: false }): Promise<Collections[C]>;
  /** 0 for a route handler's handle, n for a hook run by a write of a depth n-1 handle (at most 3). */
  readonly depth: number;
}

/** Who made the request a hook runs for. */
export interface HookAuth {
  kind: "anonymous" | "user" | "admin";
  /** The user's id; null for the admin and anonymous callers. */
  id: string | null;
  roles: string[];
}

/** What a lifecycle handler gets. */
export interface HookEvent<C extends CollectionName = CollectionName> {
  collection: C;
  op: "create" | "update" | "delete" | "restore";
  /** The fields sent, mutable in before* handlers (\`_owner_id\` too); null for delete and restore. */
  data: (WriteData<C> & { _owner_id?: string | null }) | null;
  record: Collections[C] | null;
  previous: Collections[C] | null;
  auth: HookAuth;
  tx: Tx;
}

/** What \`onCommit\` gets: the change event, after the commit. */
export interface CommitEvent<C extends CollectionName = CollectionName> {
  collection: C;
  action: "create" | "update" | "delete" | "restore";
  /** The record as committed; \`{ _id }\` only for a hard delete (\`hard: true\`). */
  record: Collections[C];
  previous?: Collections[C];
  /** Unix ms. */
  at: number;
  /** The user id, "admin", or null (anonymous). */
  by: string | null;
  hard?: true;
}

type Handler<C extends CollectionName> = (e: HookEvent<C>) => void | Promise<void>;

/** The handlers of one hook object, for the collection(s) \`C\`. */
export interface Handlers<C extends CollectionName> {
  beforeCreate?: Handler<C>;
  afterCreate?: Handler<C>;
  beforeUpdate?: Handler<C>;
  afterUpdate?: Handler<C>;
  beforeDelete?: Handler<C>;
  afterDelete?: Handler<C>;
  beforeRestore?: Handler<C>;
  afterRestore?: Handler<C>;
  onCommit?: (event: CommitEvent<C>) => unknown;
}

/** A hook object: for one collection, or \`"*"\` for every one. A file default-exports one or an array. */
export type Hook = { [C in CollectionName]: { collection: C } & Handlers<C> }[CollectionName] | ({ collection: "*" } & Handlers<CollectionName>);

/** Who calls a route: null for an anonymous caller. */
export type RouteAuth = {
  kind: "user" | "admin";
  /** The user's id (null for the admin). */
  id: string | null;
  email: string | null;
  /** The user's roles as they are now. */
  roles: string[];
  verified: boolean;
  /** True when the request carried an API key. */
  api_key: boolean;
} | null;

/** What a route handler gets. */
export interface RouteRequest {
  /** The request; its body is already read (\`body\`, \`rawBody\`). */
  request: Request;
  auth: RouteAuth;
  /** The path's \`:name\` segments, decoded. */
  params: Record<string, string>;
  /** The query string; a repeated key keeps its last value. */
  query: Record<string, string>;
  /** The body parsed as JSON (or a form as an object of its fields); undefined otherwise. */
  body: any;
  /** The body's exact text, for signature checks; "" without a body. */
  rawBody: string;
  tx: Tx;
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** A route served under /api/v1/fn/: a returned Response as it is, undefined as 204, anything else as JSON. */
export interface Route {
  method: Method | Lowercase<Method>;
  /** Literal segments and \`:name\` parameters, e.g. "/orders/:id/pay". */
  path: string;
  handler: (r: RouteRequest) => unknown;
}
`;

/**
 * TypeScript interfaces of the collections as they are now: system fields, every field with its
 * type, relation fields (one: an id; many and many_via: arrays of ids) and `_expand`. With
 * `collection`, only that one (404 when unknown). With `hooks`, the types of hook files too (HOOK_TYPES).
 */
export async function generateTypes(ctx: AppContext, opts: { collection?: string; hooks?: boolean } = {}): Promise<{ collections: string[]; types: string }> {
  // One reading of the catalog: the collections and their relations as of the same moment.
  const catalog = await currentCatalog(ctx);
  const cols = opts.collection === undefined ? catalog.list() : [catalog.require(opts.collection).col];
  const names = interfaceNames(cols);
  const rels = catalog.relations;
  const parts = [
    "// Generated by `baas types` from the collections as they were; run it again after their fields change.",
    ...cols.map((c) => renderCollection(c, rels, names)),
    [
      "/** Every generated collection by name. */",
      "export interface Collections {",
      ...cols.map((c) => `  ${c.name}: ${names.get(c.name.toLowerCase())};`),
      "}",
    ].join("\n"),
    ...(opts.hooks ? [HOOK_TYPES.trimEnd()] : []),
  ];
  return { collections: cols.map((c) => c.name), types: parts.join("\n\n") + "\n" };
}
