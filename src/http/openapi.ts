import { Kind } from "@sinclair/typebox";
import type { OpenAPIV3 } from "openapi-types";
import { VERSION } from "../version.ts";
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
 * Copies a documentation value as plain JSON: TypeBox's symbol keys dropped, every named schema of
 * `schemas.ts` replaced by a `$ref` to its component (except `self`, the component being written).
 */
function plain(value: unknown, self?: object): unknown {
  if (Array.isArray(value)) return value.map((v) => plain(v));
  if (!value || typeof value !== "object") return value;
  const name = value !== self ? NAMED.get(value) : undefined;
  if (name) return { $ref: `#/components/schemas/${name}` };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = plain(v);
  return out;
}

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
    const detail = (route.hooks?.detail ?? { responses: { default: { description: "undocumented" } } }) as OpenAPIV3.OperationObject;
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
