import type { Principal } from "../auth/principal.ts";
import type { Collection } from "../collections/types.ts";
import type { Access } from "../rules/access.ts";
import type { ListQuery } from "./parse.ts";

export type SqlValue = string | number | null;

/** A WHERE clause and its bound values. */
export interface Where {
  sql: string;
  params: SqlValue[];
}

/** The conditions every read shares: soft-delete visibility and owner filtering. */
export function baseWhere(_col: Collection, q: Pick<ListQuery, "includeDeleted">, access: Access, p: Principal): Where {
  const parts: string[] = [];
  const params: SqlValue[] = [];
  if (!q.includeDeleted) parts.push(`"_deleted_at" IS NULL`);
  if (access === "own") {
    parts.push(`"_owner_id" = ?`);
    params.push(p.kind === "user" ? p.userId : "");
  }
  return { sql: parts.length ? parts.join(" AND ") : "1", params };
}
