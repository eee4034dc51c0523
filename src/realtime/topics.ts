import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { findCollection } from "../collections/catalog.ts";
import { badRequest } from "../errors.ts";
import { parseFilters, type FilterCond } from "../query/parse.ts";
import { compileMatcher, type RecordMatcher } from "./match.ts";

/** A subscription of a stream: a whole collection, one record, or the records matching a filter. */
export interface Topic {
  collection: string;
  id: string | null;
  matcher: RecordMatcher | null;
  /** The topic as the client gave it, echoed back by POST /realtime. */
  source: string | { collection: string; filter: string | string[] };
}

const NAME_RE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const MAX_FILTER_CHARS = 4096;

/**
 * A filter in the list's syntax: one `field:op:value`, several of them as an array (ANDed), or a
 * query string of `filter=...` / `filter[field][op]=...` parameters.
 */
function parseTopicFilter(raw: unknown): FilterCond[] {
  const parts = typeof raw === "string" ? [raw] : Array.isArray(raw) ? raw : null;
  if (!parts || !parts.length || parts.some((s) => typeof s !== "string"))
    throw badRequest("a topic's filter must be a string (or an array of strings) in the list's filter syntax");
  if (parts.join("").length > MAX_FILTER_CHARS) throw badRequest(`a topic's filter is at most ${MAX_FILTER_CHARS} characters`);
  const params = new URLSearchParams();
  for (const s of parts as string[]) {
    if (/^filter(=|\[|%5B)/i.test(s)) for (const [k, v] of new URLSearchParams(s)) params.append(k, v);
    else params.append("filter", s);
  }
  const filters = parseFilters(params);
  if (!filters.length) throw badRequest("a topic's filter names no condition");
  return filters;
}

function requireTopicCollection(ctx: AppContext, name: unknown) {
  if (typeof name !== "string" || !NAME_RE.test(name)) throw badRequest(`topic names no valid collection: ${JSON.stringify(name)?.slice(0, 80)}`);
  const col = findCollection(ctx, name);
  if (!col) throw badRequest(`unknown collection "${name}" in topic`);
  return col;
}

/** Parses and checks one topic; unknown collection or bad filter → 400. */
export function parseTopic(ctx: AppContext, raw: unknown, p: Principal): Topic {
  if (typeof raw === "string") {
    const slash = raw.indexOf("/");
    const name = slash < 0 ? raw : raw.slice(0, slash);
    const id = slash < 0 ? null : raw.slice(slash + 1);
    if (id !== null && (!id || id.length > 64 || id.includes("/"))) throw badRequest(`bad topic "${raw.slice(0, 80)}": use <collection> or <collection>/<id>`);
    const col = requireTopicCollection(ctx, name);
    return { collection: col.name, id, matcher: null, source: raw };
  }
  if (raw && typeof raw === "object" && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => k !== "collection" && k !== "filter");
    if (extra.length) throw badRequest(`unknown key "${extra[0].slice(0, 40)}" in topic: use { collection, filter }`);
    const col = requireTopicCollection(ctx, o.collection);
    const filter = o.filter as string | string[];
    const matcher = compileMatcher(ctx, col, parseTopicFilter(filter), p);
    return { collection: col.name, id: null, matcher, source: { collection: col.name, filter } };
  }
  throw badRequest('a topic is "<collection>", "<collection>/<id>" or { "collection", "filter" }');
}

/** Parses a topic list (POST body or `?subscribe=`). */
export function parseTopics(ctx: AppContext, raw: unknown, p: Principal): Topic[] {
  if (!Array.isArray(raw)) throw badRequest("subscriptions must be an array of topics");
  return raw.map((t) => parseTopic(ctx, t, p));
}

/** Topic names of `?subscribe=posts,comments/<id>`. */
export function splitSubscribeParam(raw: string | null): string[] {
  return (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
