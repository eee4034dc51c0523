import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { q } from "../collections/ddl.ts";
import { badRequest } from "../errors.ts";
import { parseListQuery } from "../query/parse.ts";
import { baseWhere } from "../query/sql.ts";
import { attachRelationFields, expandRecords, parseExpand } from "../relations/expand.ts";
import { checkAccess } from "../rules/access.ts";
import { decodeRow, selectList, type RecordJson } from "./codec.ts";

export interface Page {
  items: RecordJson[];
  next_cursor: string | null;
  total: number | null;
}

/** `GET /:collection`: a page of records in offset or cursor mode. */
export function listRecords(ctx: AppContext, name: string, params: URLSearchParams, p: Principal): Page {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "read", p);
  const lq = parseListQuery(col, params);
  const expand = parseExpand(ctx, col, params.getAll("expand"));
  const where = baseWhere(col, lq, access, p);
  const table = q(col.name);
  let sql = `SELECT ${selectList(col)} FROM ${table} WHERE ${where.sql}`;
  const args = [...where.params];
  if (lq.after !== null) {
    const exists = ctx.sqlite.query(`SELECT 1 FROM ${table} WHERE "_id" = ?`).get(lq.after);
    if (!exists) throw badRequest("invalid cursor: no record has that id");
    sql += ` AND "_id" > ?`;
    args.push(lq.after);
  }
  sql += ` ORDER BY "_id" ASC LIMIT ?`;
  args.push(lq.limit + 1);
  if (lq.after === null) {
    sql += " OFFSET ?";
    args.push((lq.page - 1) * lq.limit);
  }
  const rows = ctx.sqlite.query<Record<string, unknown>, typeof args>(sql).all(...args);
  const more = rows.length > lq.limit;
  if (more) rows.pop();
  const items = rows.map((r) => decodeRow(col, r));
  attachRelationFields(ctx, col, items, p);
  expandRecords(ctx, col, items, expand, p);
  let total: number | null = null;
  if (lq.after === null) {
    total = ctx.sqlite
      .query<{ n: number }, typeof where.params>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where.sql}`)
      .get(...where.params)!.n;
  }
  return { items, next_cursor: more ? (items[items.length - 1]._id as string) : null, total };
}
