import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createRecord } from "../../records/create.ts";
import { deleteRecord } from "../../records/delete.ts";
import { parseFields } from "../../query/parse.ts";
import { listRecords } from "../../records/list.ts";
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

const NO_PARAMS = new URLSearchParams();

/** The query string of a request; most reads have none, so the URL is parsed only when there is one. */
const searchParams = (request: Request) => {
  const i = request.url.indexOf("?");
  return i < 0 ? NO_PARAMS : new URLSearchParams(request.url.slice(i + 1));
};

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
        return listRecords(ctx, params.collection, q, await principalOf(ctx, request), listOptions.defer(q));
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
          return createWithFiles(ctx, params.collection, request, p);
        }
        const raw = await readJson(request, max, "record");
        const body = recordData.defer(raw);
        return idempotent(ctx, { request, set }, p, raw, { status: 201, transaction: true }, () => createRecord(ctx, params.collection, body, p));
      },
      doc({ idempotent: true, multipart: true, summary: "Create a record (JSON, or multipart/form-data with files)", tag, access: "data", body: RecordData, ok: RecordBody, status: 201, errors: [409, 422] }),
    )
    .get(
      "/:collection/:id",
      async ({ request, params }) => {
        const q = searchParams(request);
        return getRecord(ctx, params.collection, params.id, await principalOf(ctx, request), {
          includeDeleted: getOptions.parse(q).include_deleted ?? false,
          expand: q.getAll("expand"),
          fields: parseFields(q),
        });
      },
      doc({ summary: "Read a record", tag, access: "data", query: GetQuery, ok: RecordRead, errors: [400] }),
    )
    .patch(
      "/:collection/:id",
      async ({ request, params }) => {
        const p = await principalOf(ctx, request);
        if (isMultipart(request)) return updateWithFiles(ctx, params.collection, params.id, request, p);
        return updateRecord(ctx, params.collection, params.id, recordData.defer(await readJson(request, max, "record")), p);
      },
      doc({ summary: "Update a record (the fields given; JSON, or multipart/form-data with files)", tag, access: "data", body: RecordData, multipart: true, ok: RecordBody, errors: [409, 422] }),
    )
    .delete(
      "/:collection/:id",
      async ({ request, params }) => deleteRecord(ctx, params.collection, params.id, await principalOf(ctx, request)),
      doc({ summary: "Soft-delete a record", tag, access: "data", ok: RecordBody, errors: [409] }),
    )
    .post(
      "/:collection/:id/restore",
      async ({ request, params }) => restoreRecord(ctx, params.collection, params.id, await principalOf(ctx, request)),
      doc({ summary: "Restore a soft-deleted record", tag, access: "data", ok: RecordBody, errors: [409] }),
    );
}
