import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createRecord } from "../../records/create.ts";
import { deleteRecord } from "../../records/delete.ts";
import { parseFields } from "../../query/parse.ts";
import { listRecordsJson } from "../../records/list.ts";
import { getRecord } from "../../records/read.ts";
import { restoreRecord } from "../../records/restore.ts";
import { updateRecord } from "../../records/update.ts";
import { createWithFiles, isMultipart, updateWithFiles } from "../../records/upload.ts";
import { readJson } from "../body.ts";
import { bodyChecker, queryChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { principalOf } from "../request.ts";
import { idempotent } from "../idempotency.ts";
import { GetQuery, ListQuery, RecordBody, RecordData, RecordList, RecordRead } from "../schemas.ts";
import { etagOf, parseIfMatch } from "../../records/version.ts";
import type { RecordJson } from "../../query/rows.ts";

const NO_PARAMS = new URLSearchParams();
/** The content type Elysia gives an answer it encodes, for the answers encoded here. */
const JSON_HEADERS = { "content-type": "application/json;charset=utf-8" };

/** The query string of a request; most reads have none, so the URL is parsed only when there is one. */
const searchParams = (request: Request) => {
  const i = request.url.indexOf("?");
  return i < 0 ? NO_PARAMS : new URLSearchParams(request.url.slice(i + 1));
};

type Set = { headers: Record<string, string | number> };

/** Puts a record's version on the answer as its `ETag` (CONTRACT §15); an answer without `_updated_at` (`fields=`) has none. */
function tagged<T>(set: Set, record: T): T {
  if (typeof (record as RecordJson)?._updated_at === "number") set.headers.etag = etagOf(record as RecordJson);
  return record;
}

/** The `If-Match` precondition of a write, if any. */
const ifMatchOf = (request: Request) => parseIfMatch(request.headers.get("if-match"));

/**
 * True when `If-None-Match` names the record's current version (or is `*`): the GET answers 304 without a body.
 * Weak tags compare by their value, as RFC 9110 says for If-None-Match.
 */
function notModified(request: Request, record: RecordJson): boolean {
  const header = request.headers.get("if-none-match");
  if (header === null || typeof record._updated_at !== "number") return false;
  if (header.trim() === "*") return true;
  const etag = etagOf(record);
  return header.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

const tag = "records";
const recordData = bodyChecker(RecordData);
// The query language reads the rest of the query string (filters, sort, fields, expand, after, search).
export const listOptions = queryChecker(ListQuery, {}, { pick: ["include_deleted", "limit", "page", "total"], last: true });
const getOptions = queryChecker(GetQuery, {}, { pick: ["include_deleted"] });

/**
 * The data API: `/api/v1/:collection[/:id]`. A record body must be an object (its fields are checked
 * against the collection by the store); the query string's scalars are checked by the schema, the rest
 * is read by the query language (its own 400s).
 */
export function recordRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1" })
    .get(
      "/:collection",
      async ({ request, params }) => {
        const q = searchParams(request);
        const text = await listRecordsJson(ctx, params.collection, q, await principalOf(ctx, request), listOptions.defer(q));
        return new Response(text, { headers: JSON_HEADERS });
      },
      doc({ summary: "List records", tag, access: "data", query: ListQuery, ok: RecordList, errors: [400] }),
    )
    .post(
      "/:collection",
      async ({ request, params, set }) => {
        const p = await principalOf(ctx, request);
        // Files (CONTRACT §14): a multipart body streams its files to storage (files/upload.ts); not idempotent-keyed.
        if (isMultipart(request)) {
          set.status = 201;
          return tagged(set, await createWithFiles(ctx, params.collection, request, p));
        }
        const raw = await readJson(request, max, "record");
        const body = recordData.defer(raw);
        return tagged(set, await idempotent(ctx, { request, set }, p, raw, { status: 201, transaction: true }, () => createRecord(ctx, params.collection, body, p)));
      },
      doc({
        idempotent: true,
        multipart: true,
        summary: "Create a record (JSON, or multipart/form-data with files)",
        tag,
        access: "data",
        body: RecordData,
        ok: RecordBody,
        status: 201,
        errors: [409, 422],
        etag: "answer",
      }),
    )
    .get(
      "/:collection/:id",
      async ({ request, params, set }) => {
        const q = searchParams(request);
        const record = await getRecord(ctx, params.collection, params.id, await principalOf(ctx, request), {
          includeDeleted: getOptions.parse(q).include_deleted ?? false,
          expand: q.getAll("expand"),
          fields: parseFields(q),
        });
        tagged(set, record);
        if (notModified(request, record)) return new Response(null, { status: 304, headers: { etag: etagOf(record) } });
        return record;
      },
      doc({ summary: "Read a record", tag, access: "data", query: GetQuery, ok: RecordRead, errors: [400], etag: "read" }),
    )
    .patch(
      "/:collection/:id",
      async ({ request, params, set }) => {
        const p = await principalOf(ctx, request);
        const ifMatch = ifMatchOf(request);
        if (isMultipart(request)) return tagged(set, await updateWithFiles(ctx, params.collection, params.id, request, p, { ifMatch }));
        const body = recordData.defer(await readJson(request, max, "record"));
        return tagged(set, await updateRecord(ctx, params.collection, params.id, body, p, { ifMatch }));
      },
      doc({
        summary: "Update a record (the fields given; JSON, or multipart/form-data with files)",
        tag,
        access: "data",
        body: RecordData,
        multipart: true,
        ok: RecordBody,
        errors: [409, 422],
        etag: "write",
      }),
    )
    .delete(
      "/:collection/:id",
      async ({ request, params, set }) =>
        tagged(set, await deleteRecord(ctx, params.collection, params.id, await principalOf(ctx, request), { ifMatch: ifMatchOf(request) })),
      doc({ summary: "Soft-delete a record", tag, access: "data", ok: RecordBody, errors: [409], etag: "write" }),
    )
    .post(
      "/:collection/:id/restore",
      async ({ request, params, set }) =>
        tagged(set, await restoreRecord(ctx, params.collection, params.id, await principalOf(ctx, request), { ifMatch: ifMatchOf(request) })),
      doc({ summary: "Restore a soft-deleted record", tag, access: "data", ok: RecordBody, errors: [409], etag: "write" }),
    );
}
