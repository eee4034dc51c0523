import { Kind } from "@sinclair/typebox";
import type { OpenAPIV3 } from "openapi-types";
import type { Collection, FieldType } from "../catalog/types.ts";
import { VERSION } from "../version.ts";
import { operationOf } from "./doc.ts";
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
  for (const route of routes) {
    const method = route.method.toLowerCase();
    if (!METHODS.has(method)) continue;
    const { path, params } = openApiPath(route.path);
    const detail = operationOf(route.hooks?.detail) ?? { responses: { default: { description: "undocumented" } } };
    const pathParams = params.map((name) => ({ name, in: "path", required: true, schema: { type: "string" } }));
    const op = plain(detail) as Record<string, unknown>;
    op.operationId = `${method}${path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase())}`;
    op.parameters = [...pathParams, ...((op.parameters as unknown[]) ?? [])];
    if (!(op.parameters as unknown[]).length) delete op.parameters;
    (paths[path] ??= {})[method] = op;
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
  json: { type: ["object", "array", "null"] },
};

/**
 * The document narrowed to one collection's data API, for clients generated from it: the paths of
 * `/api/v1/{collection}` spelled with the collection's name, and its records, bodies and lists as
 * components with the collection's own fields (records also keep any field a later write adds).
 */
export function collectionOpenApi(doc: OpenAPIV3.Document, col: Pick<Collection, "name" | "fields">): OpenAPIV3.Document {
  const base = col.name.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase());
  const name = base[0]!.toUpperCase() + base.slice(1);
  const refs: Record<string, string> = { RecordBody: `${name}Record`, RecordData: `${name}Data`, RecordList: `${name}List`, BulkBody: `${name}Bulk` };
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
  const fields = Object.fromEntries(col.fields.map((f) => [f.name, FIELD_SCHEMAS[f.type]]));
  const schemas = components!.schemas!;
  const record = schemas.RecordBody as OpenAPIV3.SchemaObject;
  schemas[refs.RecordBody!] = { ...record, description: `A record of ${col.name}.`, properties: { ...record.properties, ...fields }, required: [...(record.required ?? []), ...col.fields.map((f) => f.name)] };
  schemas[refs.RecordData!] = { type: "object", description: `The fields of a ${col.name} record to write (system fields are ignored).`, properties: fields, additionalProperties: true };
  schemas[refs.RecordList!] = { ...(schemas.RecordList as object), properties: { ...(schemas.RecordList as OpenAPIV3.SchemaObject).properties, items: { type: "array", items: { $ref: `#/components/schemas/${refs.RecordBody}` } } } } as OpenAPIV3.SchemaObject;
  schemas[refs.BulkBody!] = { ...(schemas.BulkBody as object), items: { $ref: `#/components/schemas/${refs.RecordData}` } } as OpenAPIV3.SchemaObject;
  return { ...doc, info: { ...doc.info, title: `${doc.info.title}: ${col.name}` }, paths: own, components: components! };
}
