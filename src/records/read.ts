import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { attachRelationFields, expandRecords, parseExpand } from "../relations/expand.ts";
import { checkAccess, ownsRecord, recordNotFound } from "../rules/access.ts";
import { fetchRecord, type RecordJson } from "./codec.ts";

/** `GET /:collection/:id`: 404 for a missing, soft-deleted (unless asked for) or hidden record. */
export function getRecord(
  ctx: AppContext,
  name: string,
  id: string,
  p: Principal,
  opts: { includeDeleted?: boolean; expand?: string[] } = {},
): RecordJson {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "read", p);
  const expand = parseExpand(ctx, col, opts.expand);
  const record = fetchRecord(ctx, col, id);
  if (!record || (record._deleted_at !== null && !opts.includeDeleted)) throw recordNotFound();
  if (access === "own" && !ownsRecord(p, record)) throw recordNotFound();
  attachRelationFields(ctx, col, [record], p);
  expandRecords(ctx, col, [record], expand, p);
  return record;
}
