import type { TSchema } from "elysia";
import type { OpenAPIV3 } from "openapi-types";

/** Who may call a route: no credentials, a user (Bearer access token), an admin, or anyone the collection's rules let in. */
export type Access = "public" | "user" | "admin" | "data";

/** What a route documents about itself; `doc()` turns it into the OpenAPI operation the document shows. */
export interface RouteDoc {
  summary: string;
  tag: string;
  access: Access;
  description?: string;
  body?: TSchema;
  query?: TSchema;
  /** The success answer's body (JSON unless `media` says otherwise). */
  ok?: TSchema;
  /** The success status (200 unless given); `alsoOk` lists others (e.g. 200 and 201 for an idempotent create). */
  status?: number;
  alsoOk?: number[];
  /** The success answer's media type when it is not JSON. */
  media?: string;
  /** Error statuses beyond what the access and the body imply. */
  errors?: number[];
  /** The body may also be multipart/form-data with files (CONTRACT §14). */
  multipart?: boolean;
  /** The body may be left out (`requestBody.required: false`). */
  optionalBody?: boolean;
  /** Takes an `Idempotency-Key` (http/idempotency.ts): its header, the replay's header, 409 and 422 of a key. */
  idempotent?: boolean;
  /**
   * Answers one record with its version as `ETag` (CONTRACT §15): `read` also takes `If-None-Match` (304),
   * `write` takes `If-Match` (412 when stale), `answer` only carries the header.
   */
  etag?: "answer" | "read" | "write";
  /** A second path the route answers under its own documentation (`/_` also serves `/_/`). */
  also?: { path: string; doc: RouteDoc };
}

const ERROR_TEXT: Record<number, string> = {
  400: "bad request",
  401: "missing, invalid or expired credentials",
  403: "forbidden by a rule, a disabled method or the caller's role (on /auth: an impersonation token)",
  404: "no such collection, record or resource",
  409: "conflict",
  413: "body larger than the limit",
  422: "field validation failed",
  429: "rate limited or locked (Retry-After)",
  412: "If-Match names a version the record is no longer at (precondition_failed)",
  503: "unavailable",
};

const SECURITY: Record<Access, OpenAPIV3.SecurityRequirementObject[]> = {
  public: [],
  user: [{ bearer: [] }],
  admin: [{ bearer: [] }, { adminToken: [] }],
  data: [{}, { bearer: [] }, { apiKey: [] }, { adminToken: [] }],
};

// A user route is under /auth, where an impersonation token is refused with 403 (but on GET /auth/me, which lists it too).
const ACCESS_ERRORS: Record<Access, number[]> = { public: [], user: [401, 403], admin: [401, 403], data: [401, 403, 404] };

/** Marks a schema reference to the error bodies; the document builder resolves these to components. */
export const ERROR_REF = { $ref: "#/components/schemas/ErrorBody" } as const;
export const VALIDATION_REF = { $ref: "#/components/schemas/ValidationBody" } as const;

const IDEMPOTENCY_KEY: OpenAPIV3.ParameterObject = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: the same key from the same caller within 24 h answers the first answer again (Idempotent-Replayed: true) " +
    "instead of doing the work twice; with another body 422 idempotency_key_reused.",
  schema: { type: "string", minLength: 1, maxLength: 255 },
};
const ETAG: OpenAPIV3.HeaderObject = { description: "the record's version, quoted; it changes with every update, delete and restore", schema: { type: "string" } };
const IF_MATCH: OpenAPIV3.ParameterObject = {
  name: "If-Match",
  in: "header",
  required: false,
  description: "Writes only while the record is at one of these versions (ETag values; * any existing record), else 412 precondition_failed.",
  schema: { type: "string" },
};
const IF_NONE_MATCH: OpenAPIV3.ParameterObject = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "304 without a body when the record is still at one of these versions (ETag values; * any).",
  schema: { type: "string" },
};
const REPLAYED: OpenAPIV3.HeaderObject = { description: "true when this is the kept answer of an earlier request with the same Idempotency-Key", schema: { type: "string", enum: ["true"] } };

type Content = NonNullable<OpenAPIV3.ResponseObject["content"]>;

/** A record body with files (CONTRACT §14): plain fields as form fields, files under their field's name. */
const MULTIPART = {
  "multipart/form-data": {
    schema: {
      type: "object",
      description:
        "Fields as form fields (a text field's value as it is, any other as JSON); files as file parts under their field's name; on a field of several files `field+` appends and `field-` names a file to remove.",
      additionalProperties: { oneOf: [{ type: "string" }, { type: "string", format: "binary" }] },
    },
  },
};
const media = (type: string, schema: unknown) => ({ [type]: { schema } }) as Content;
const json = (schema: unknown) => media("application/json", schema);

/**
 * Where a route's `detail` keeps its RouteDoc. A string key: Elysia copies a route's hooks (`detail`
 * included) key by key when an app uses another, and would drop a symbol.
 */
const ROUTE_DOC = "x-route-doc";

/**
 * The `detail` of a route: its documentation, made an OpenAPI operation (`operationOf`) when the
 * document is first asked for, not for every route at start.
 */
export function doc(d: RouteDoc): { detail: OpenAPIV3.OperationObject } {
  return { detail: { [ROUTE_DOC]: d } as unknown as OpenAPIV3.OperationObject };
}

/** The OpenAPI operation of a route's `detail`: built from its RouteDoc (see `doc`), else the detail as given. */
export function operationOf(detail: object | undefined): OpenAPIV3.OperationObject | undefined {
  const d = (detail as Record<string, RouteDoc> | undefined)?.[ROUTE_DOC];
  return d ? operation(d) : (detail as OpenAPIV3.OperationObject | undefined);
}

/** The second path a route's `detail` documents (RouteDoc's `also`) with its operation, if any. */
export function alsoOf(detail: object | undefined): { path: string; operation: OpenAPIV3.OperationObject } | undefined {
  const also = (detail as Record<string, RouteDoc> | undefined)?.[ROUTE_DOC]?.also;
  return also ? { path: also.path, operation: operation(also.doc) } : undefined;
}

/**
 * A query parameter's schema as the query string spells it: a boolean is also accepted as 1 or 0
 * (`queryChecker` reads `true`, `false`, `1` and `0`).
 */
function queryParamSchema(schema: TSchema): unknown {
  if (schema.type !== "boolean") return schema;
  const { type: _, ...rest } = schema;
  return { ...rest, anyOf: [{ type: "boolean" }, { type: "string", enum: ["1", "0"] }] };
}

function operation(d: RouteDoc): OpenAPIV3.OperationObject {
  const responses: OpenAPIV3.ResponsesObject = {};
  const okContent = d.media ? media(d.media, d.ok ?? { type: "string" }) : d.ok ? json(d.ok) : undefined;
  for (const status of [d.status ?? 200, ...(d.alsoOk ?? [])]) {
    const redirect = status >= 300 && status < 400;
    responses[status] = {
      description: redirect ? "redirect" : "success",
      ...(redirect ? { headers: { Location: { description: "where to go", required: true, schema: { type: "string" } } } } : {}),
      ...(!redirect && (d.idempotent || d.etag)
        ? { headers: { ...(d.idempotent ? { "Idempotent-Replayed": REPLAYED } : {}), ...(d.etag ? { ETag: ETAG } : {}) } }
        : {}),
      ...(okContent ? { content: okContent } : {}),
    };
  }
  if (d.etag === "read") responses[304] = { description: "not modified (If-None-Match names the current version)", headers: { ETag: ETAG } };
  const errors = new Set([
    ...ACCESS_ERRORS[d.access],
    ...(d.body ? [400, 413] : []),
    ...(d.errors ?? []),
    ...(d.idempotent ? [400, 409, 422] : []),
    ...(d.etag === "write" ? [412] : []),
  ]);
  for (const status of [...errors].sort()) {
    // An Idempotency-Key used with another request is a 422 with the error body.
    const schema = status !== 422 ? ERROR_REF : d.idempotent ? { oneOf: [VALIDATION_REF, ERROR_REF] } : VALIDATION_REF;
    responses[status] = { description: ERROR_TEXT[status] ?? "error", content: json(schema) };
  }
  responses.default = { description: "any other error (500 internal, 503 unavailable)", content: json(ERROR_REF) };
  const parameters: OpenAPIV3.ParameterObject[] = [];
  const props = (d.query as { properties?: Record<string, TSchema & { description?: string }> } | undefined)?.properties ?? {};
  const required = new Set((d.query as { required?: string[] } | undefined)?.required ?? []);
  for (const [name, schema] of Object.entries(props))
    parameters.push({ name, in: "query", required: required.has(name), schema: queryParamSchema(schema) as OpenAPIV3.SchemaObject, ...(schema.description ? { description: schema.description } : {}) });
  if (d.idempotent) parameters.push(IDEMPOTENCY_KEY);
  if (d.etag === "write") parameters.push(IF_MATCH);
  if (d.etag === "read") parameters.push(IF_NONE_MATCH);
  return {
    summary: d.summary,
    tags: [d.tag],
    ...(d.description ? { description: d.description } : {}),
    security: SECURITY[d.access],
    ...(parameters.length ? { parameters } : {}),
    ...(d.body ? { requestBody: { required: !d.optionalBody, content: { ...json(d.body), ...(d.multipart ? MULTIPART : {}) } as OpenAPIV3.RequestBodyObject["content"] } } : {}),
    responses,
  };
}
