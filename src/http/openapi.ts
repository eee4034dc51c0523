import { Kind } from "@sinclair/typebox";
import type { OpenAPIV3 } from "openapi-types";
import type { Collection, FieldType, Relation } from "../catalog/types.ts";
import { VERSION } from "../version.ts";
import { alsoOf, operationOf } from "./doc.ts";
import * as schemas from "./schemas.ts";

/** What the document needs of a route of the app (Elysia's `app.routes` entries). */
export interface RouteInfo {
  method: string;
  path: string;
  hooks?: { detail?: OpenAPIV3.OperationObject };
}

/** The named schemas, found by identity wherever a route's documentation uses them. */
const NAMED = new Map<object, string>(
  Object.entries(schemas)
    .filter(([, v]) => typeof v === "object" && v !== null && Kind in v)
    .map(([name, v]) => [v as object, name]),
);

/**
 * Elysia's `t.Integer`/`t.Numeric` accept a numeric string too (for query strings): `anyOf` of such a
 * string and the number. The document describes JSON values and typed parameters: the number alone.
 */
function coercedNumber(value: Record<string, unknown>): unknown {
  const any = value.anyOf;
  if (!Array.isArray(any) || any.length !== 2) return undefined;
  const [text, num] = any as Record<string, unknown>[];
  const numeric = text?.type === "string" && (text.format === "integer" || text.format === "numeric");
  return numeric && (num?.type === "integer" || num?.type === "number") ? num : undefined;
}

/**
 * Copies a documentation value as plain JSON: TypeBox's symbol keys dropped, every named schema of
 * `schemas.ts` replaced by a `$ref` to its component (except `self`, the component being written).
 */
function plain(value: unknown, self?: object): unknown {
  if (Array.isArray(value)) return value.map((v) => plain(v));
  if (!value || typeof value !== "object") return value;
  const name = value !== self ? NAMED.get(value) : undefined;
  if (name) return { $ref: `#/components/schemas/${name}` };
  const num = coercedNumber(value as Record<string, unknown>);
  if (num) return { ...plain(num) as object, ...plain(omit(value as Record<string, unknown>, "anyOf")) as object };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = plain(v);
  return out;
}

const omit = (o: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));

/** `/api/v1/:collection/:id` → `/api/v1/{collection}/{id}`; a trailing `*` becomes `{path}`. */
export function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const out = path
    .split("/")
    .map((seg) => {
      if (seg.startsWith(":")) {
        params.push(seg.slice(1));
        return `{${seg.slice(1)}}`;
      }
      if (seg === "*") {
        params.push("path");
        return "{path}";
      }
      return seg;
    })
    .join("/");
  return { path: out, params };
}

/** Methods the document lists; OPTIONS routes are the CORS preflight, answered for any path. */
const METHODS = new Set(["get", "put", "post", "delete", "patch", "head"]);

/**
 * The OpenAPI 3.1 document of the app's routes, built from each route's `detail` (see `doc()`), whose
 * schemas are the TypeBox schemas of `schemas.ts`. Built once per app, when first asked for.
 */
export function buildOpenApi(routes: readonly RouteInfo[], serverUrl: string): OpenAPIV3.Document {
  const paths: Record<string, Record<string, unknown>> = {};
  const add = (method: string, { path, params }: { path: string; params: string[] }, detail: OpenAPIV3.OperationObject) => {
    const pathParams = params.map((name) => ({ name, in: "path", required: true, schema: { type: "string" } }));
    const op = plain(detail) as Record<string, unknown>;
    // A path ending in "/" (the console's page) is named apart from the same path without it.
    op.operationId = `${method}${path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase())}${path.endsWith("/") ? "Index" : ""}`;
    op.parameters = [...pathParams, ...((op.parameters as unknown[]) ?? [])];
    if (!(op.parameters as unknown[]).length) delete op.parameters;
    (paths[path] ??= {})[method] = op;
  };
  for (const route of routes) {
    const method = route.method.toLowerCase();
    if (!METHODS.has(method) || (route.hooks?.detail as { hide?: boolean } | undefined)?.hide) continue;
    add(method, openApiPath(route.path), operationOf(route.hooks?.detail) ?? { responses: { default: { description: "undocumented" } } });
    const also = alsoOf(route.hooks?.detail);
    if (also) add(method, openApiPath(also.path), also.operation);
  }
  const components: Record<string, unknown> = {};
  for (const [schema, name] of NAMED) components[name] = plain(schema, schema);
  return {
    openapi: "3.1.0",
    info: {
      title: "baas API",
      version: VERSION,
      description:
        "The HTTP API of a baas server. Errors have the body `{ error, code }` (422: `{ errors: [{ field, rule, message }] }`). " +
        "Record bodies hold the collection's own fields: `GET /admin/collections/{name}` lists them.",
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "a user's access token, the admin secret or an admin token" },
        apiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "a user's API key (data API only)" },
        adminToken: { type: "apiKey", in: "header", name: "X-Admin-Token", description: "the admin secret or an admin token" },
      },
    },
  } as unknown as OpenAPIV3.Document;
}

/** The JSON Schema of each stored field type, as the data API returns it (a field never set is null). */
const FIELD_SCHEMAS: Record<FieldType, object> = {
  text: { type: ["string", "null"] },
  number: { type: ["number", "null"] },
  boolean: { type: ["boolean", "null"] },
  // Any JSON object (its keys readable) or array.
  json: { type: ["object", "array", "null"], additionalProperties: true, items: {} },
  // The stored file name (GET /api/v1/files/{collection}/{id}/{name}); a field of several files: an array of names.
  file: { type: ["string", "null"], description: "a file name (GET /api/v1/files/{collection}/{id}/{name})" },
};

/** What the per-collection document needs of a collection. */
type CollectionShape = Pick<Collection, "name" | "fields">;

/** What the per-collection document needs of a relation of the collection. */
type RelationShape = Pick<Relation, "from_field" | "to_col" | "to_field" | "type">;

/** `user_profiles` → `UserProfiles`: a collection's name as the start of its components' names. */
function componentBase(name: string): string {
  const base = name.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase());
  return base[0]!.toUpperCase() + base.slice(1);
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The stored fields of a collection as JSON Schema properties; a `one` relation field holds the target's `_id`. */
function storedFields(col: CollectionShape, relations: readonly RelationShape[]): Record<string, object> {
  const out: Record<string, object> = {};
  for (const f of col.fields) {
    const rel = relations.find((r) => r.from_field.toLowerCase() === f.name.toLowerCase());
    if (rel && rel.type !== "one") continue;
    out[f.name] = rel ? { type: ["string", "null"], description: `the _id of a record of "${rel.to_col}" (relation one)` } : FIELD_SCHEMAS[f.type];
  }
  return out;
}

/**
 * The document narrowed to one collection's data API, for clients generated from it: the paths of
 * `/api/v1/{collection}` spelled with the collection's name, and its records, projections (`fields=`),
 * bodies and lists as components with the collection's own fields, its relation fields (`one`: an id;
 * `many`, `many_via`: arrays of ids) and `_expand` with the records it embeds (`targets`: the relations'
 * target collections by lower-cased name). Records also keep any field a later write adds.
 */
export function collectionOpenApi(
  doc: OpenAPIV3.Document,
  col: CollectionShape,
  relations: readonly RelationShape[] = [],
  targets: ReadonlyMap<string, CollectionShape> = new Map(),
): OpenAPIV3.Document {
  const name = componentBase(col.name);
  const refs: Record<string, string> = {
    RecordBody: `${name}Record`,
    RecordProjection: `${name}Projection`,
    RecordRead: `${name}Read`,
    RecordData: `${name}Data`,
    RecordList: `${name}List`,
    BulkBody: `${name}Bulk`,
  };
  let text = JSON.stringify({ paths: doc.paths, components: doc.components });
  for (const [from, to] of Object.entries(refs)) text = text.replaceAll(`"#/components/schemas/${from}"`, `"#/components/schemas/${to}"`);
  const { paths, components } = JSON.parse(text) as Pick<OpenAPIV3.Document, "paths" | "components">;
  const own: OpenAPIV3.PathsObject = {};
  const prefix = "/api/v1/{collection}";
  for (const [path, item] of Object.entries(paths)) {
    if (path !== prefix && !path.startsWith(`${prefix}/`)) continue;
    for (const op of Object.values(item as Record<string, OpenAPIV3.OperationObject>)) {
      op.parameters = (op.parameters as OpenAPIV3.ParameterObject[] | undefined)?.filter((p) => !(p.in === "path" && p.name === "collection"));
      if (!op.parameters?.length) delete op.parameters;
      op.operationId = `${op.operationId}${name}`;
    }
    own[`/api/v1/${col.name}${path.slice(prefix.length)}`] = item;
  }
  const schemas = components!.schemas!;
  const record = schemas.RecordBody as OpenAPIV3.SchemaObject;
  const system = record.properties!;
  const fields = storedFields(col, relations);
  // Virtual relation fields: ids of the records on the other side.
  const linked: Record<string, object> = {};
  for (const r of relations) {
    if (r.type === "many")
      linked[r.from_field] = { type: ["array", "null"], items: { type: "string" }, description: `the _ids of the "${r.to_col}" records whose "${r.to_field}" names this one (relation many; null when hidden from the reader)` };
    else if (r.type === "many_via") linked[r.from_field] = { type: "array", items: { type: "string" }, description: `the _ids of linked "${r.to_col}" records (relation many_via)` };
  }
  // The records `expand` embeds: a target's system and stored fields (embedded records carry no relation lists and no _expand).
  const expanded = (target: string): object => {
    const t = targets.get(target.toLowerCase());
    if (!t) return ref(refs.RecordBody!);
    const component = `${componentBase(t.name)}Expanded`;
    const props = { ...system, ...storedFields(t, []) };
    schemas[component] ??= { type: "object", description: `A record of ${t.name} embedded by expand.`, properties: props, required: Object.keys(props), additionalProperties: true } as OpenAPIV3.SchemaObject;
    return ref(component);
  };
  const expand: Record<string, object> = {};
  for (const r of relations) expand[r.from_field] = r.type === "one" ? { anyOf: [expanded(r.to_col), { type: "null" }] } : { type: ["array", "null"], items: expanded(r.to_col) };
  const properties: Record<string, OpenAPIV3.SchemaObject> = {
    ...system,
    ...fields,
    ...linked,
    ...(relations.length ? { _expand: { type: "object", description: "Related records, with `expand` (a hidden or missing one is null or left out).", properties: expand } } : {}),
  } as Record<string, OpenAPIV3.SchemaObject>;
  schemas[refs.RecordBody!] = { ...record, description: `A record of ${col.name}.`, properties, required: [...(record.required ?? []), ...Object.keys(fields), ...Object.keys(linked)] };
  schemas[refs.RecordProjection!] = { type: "object", description: `A record of ${col.name} read with \`fields=\`: \`_id\` and the fields asked for.`, properties, required: ["_id"], additionalProperties: true };
  schemas[refs.RecordRead!] = { anyOf: [ref(refs.RecordBody!), ref(refs.RecordProjection!)] };
  const writable = { ...fields, ...Object.fromEntries(Object.entries(linked).filter(([k]) => relations.find((r) => r.from_field === k)?.type === "many_via")) };
  schemas[refs.RecordData!] = { type: "object", description: `The fields of a ${col.name} record to write (system fields are ignored).`, properties: writable, additionalProperties: true };
  schemas[refs.RecordList!] = { ...(schemas.RecordList as object), properties: { ...(schemas.RecordList as OpenAPIV3.SchemaObject).properties, items: { type: "array", items: ref(refs.RecordRead!) } } } as OpenAPIV3.SchemaObject;
  schemas[refs.BulkBody!] = { ...(schemas.BulkBody as object), items: ref(refs.RecordData!) } as OpenAPIV3.SchemaObject;
  return { ...doc, info: { ...doc.info, title: `${doc.info.title}: ${col.name}` }, paths: own, components: components! };
}
