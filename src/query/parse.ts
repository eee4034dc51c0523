import type { Collection } from "../collections/types.ts";
import { badRequest } from "../errors.ts";

/** A list request, parsed from the query string (SPEC 4.2, CONTRACT §4). */
export interface ListQuery {
  limit: number;
  page: number;
  after: string | null;
  includeDeleted: boolean;
}

function one(params: URLSearchParams, key: string): string | null {
  const all = params.getAll(key);
  return all.length ? all[all.length - 1] : null;
}

/** Parses `true`/`false`/`1`/`0`; 400 otherwise. */
export function parseBool(raw: string | null, name: string): boolean {
  if (raw === null || raw === "") return false;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw badRequest(`${name} must be true or false`);
}

function parseInt(raw: string | null, name: string, fallback: number, min: number, max: number): number {
  if (raw === null || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw badRequest(`${name} must be an integer between ${min} and ${max}`);
  const n = Number(raw);
  if (n < min || n > max) throw badRequest(`${name} must be an integer between ${min} and ${max}`);
  return n;
}

/** Parses the list parameters of a request. */
export function parseListQuery(_col: Collection, params: URLSearchParams): ListQuery {
  return {
    limit: parseInt(one(params, "limit"), "limit", 50, 1, 500),
    page: parseInt(one(params, "page"), "page", 1, 1, 10_000_000),
    after: one(params, "after") || null,
    includeDeleted: parseBool(one(params, "include_deleted"), "include_deleted"),
  };
}
