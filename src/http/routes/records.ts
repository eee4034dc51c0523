import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { createRecord } from "../../records/create.ts";
import { deleteRecord } from "../../records/delete.ts";
import { listRecords } from "../../records/list.ts";
import { getRecord } from "../../records/read.ts";
import { restoreRecord } from "../../records/restore.ts";
import { updateRecord } from "../../records/update.ts";
import { parseBool } from "../../query/parse.ts";
import { readJson } from "../body.ts";
import { principalOf } from "../request.ts";

const NO_PARAMS = new URLSearchParams();

/** The query string of a request; most reads have none, so the URL is parsed only when there is one. */
const searchParams = (request: Request) => {
  const i = request.url.indexOf("?");
  return i < 0 ? NO_PARAMS : new URLSearchParams(request.url.slice(i + 1));
};

/** The data API: `/api/v1/:collection[/:id]`. */
export function recordRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1" })
    .get("/:collection", async ({ request, params }) => listRecords(ctx, params.collection, searchParams(request), await principalOf(ctx, request)))
    .post("/:collection", async ({ request, params, set }) => {
      const p = await principalOf(ctx, request);
      const body = await readJson(request, max);
      set.status = 201;
      return createRecord(ctx, params.collection, body, p);
    })
    .get("/:collection/:id", async ({ request, params }) => {
      const q = searchParams(request);
      return getRecord(ctx, params.collection, params.id, await principalOf(ctx, request), {
        includeDeleted: parseBool(q.get("include_deleted"), "include_deleted"),
        expand: q.getAll("expand"),
        fields: q.get("fields"),
      });
    })
    .patch("/:collection/:id", async ({ request, params }) => {
      const p = await principalOf(ctx, request);
      return updateRecord(ctx, params.collection, params.id, await readJson(request, max), p);
    })
    .delete("/:collection/:id", async ({ request, params }) => deleteRecord(ctx, params.collection, params.id, await principalOf(ctx, request)))
    .post("/:collection/:id/restore", async ({ request, params }) =>
      restoreRecord(ctx, params.collection, params.id, await principalOf(ctx, request)),
    );
}
