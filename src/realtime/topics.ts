import type { Principal } from "../principal.ts";
import type { AppContext } from "../context.ts";
import { findHandle } from "../catalog/catalog.ts";
import { badRequest } from "../errors.ts";
import { parseFilters, type FilterCond } from "../query/parse.ts";
import { checkAccess } from "../rules/access.ts";
import { prepareRules } from "../rules/scope.ts";
import { compileFilter, type TopicFilter } from "./match.ts";

/** A subscription of a stream: a whole collection, one record, or the records matching a filter. */
export interface Topic {
  collection: string;
  id: string | null;
  filter: TopicFilter | null;
  /** The topic as the client gave it, echoed back by POST /realtime. */
  source: string | { collection: string; filter: string | string[] };
  /** The characters of its filter's `like` patterns (see MAX_LIKE_CHARS_PER_STREAM). */
  likeChars?: number;
}

const NAME_RE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const MAX_FILTER_CHARS = 4096;
/** Topics of one stream: every event of a followed collection is looked at against each of its topics there. */
export const MAX_TOPICS_PER_STREAM = 1000;
/**
 * Different filters on `many`/`many_via` fields per stream: each is a condition the database evaluates
 * for every event of its collection (equal ones, of any stream, are asked once).
 */
export const MAX_QUERY_FILTERS_PER_STREAM = 20;
/**
 * The characters of `like` patterns in all the topics of one stream: each is matched against every event of its
 * collection, in time that grows with the value's length times the pattern's (1,000 topics of 256 characters took
 * seconds per event of a 100 KB value).
 */
export const MAX_LIKE_CHARS_PER_STREAM = 4096;

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

async function requireTopicCollection(ctx: AppContext, name: unknown) {
  if (typeof name !== "string" || !NAME_RE.test(name)) throw badRequest(`topic names no valid collection: ${JSON.stringify(name)?.slice(0, 80)}`);
  const h = await findHandle(ctx, name);
  if (!h) throw badRequest(`unknown collection "${name}" in topic`);
  return h;
}

/** Parses and checks one topic; unknown collection or bad filter → 400. */
export async function parseTopic(ctx: AppContext, raw: unknown, p: Principal): Promise<Topic> {
  if (typeof raw === "string") {
    const slash = raw.indexOf("/");
    const name = slash < 0 ? raw : raw.slice(0, slash);
    const id = slash < 0 ? null : raw.slice(slash + 1);
    if (id !== null && (!id || id.length > 64 || id.includes("/"))) throw badRequest(`bad topic "${raw.slice(0, 80)}": use <collection> or <collection>/<id>`);
    const h = await requireTopicCollection(ctx, name);
    return { collection: h.name, id, filter: null, source: raw };
  }
  if (raw && typeof raw === "object" && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => k !== "collection" && k !== "filter");
    if (extra.length) throw badRequest(`unknown key "${extra[0].slice(0, 40)}" in topic: use { collection, filter }`);
    const h = await requireTopicCollection(ctx, o.collection);
    // SECURITY: the read rule first (401/403 as the list answers), so a caller who may not read learns
    // nothing of the collection's fields from how its filter is answered.
    prepareRules(h.catalog);
    checkAccess(h.col, "read", p);
    const filter = o.filter as string | string[];
    const conds = parseTopicFilter(filter);
    const compiled = compileFilter(ctx, h, conds, p);
    const likeChars = conds.reduce((n, c) => (c.op === "like" ? n + c.value.length : n), 0);
    // Echoed as sent (POST /realtime answers the topics as the client gave them).
    return { collection: h.name, id: null, filter: compiled, source: { collection: o.collection as string, filter }, likeChars };
  }
  throw badRequest('a topic is "<collection>", "<collection>/<id>" or { "collection", "filter" }');
}

/** 400 for a list of more topics than one stream takes: checked before the limits per address (a 429 would say "later"). */
export function checkTopicCount(raw: unknown): void {
  if (Array.isArray(raw) && raw.length > MAX_TOPICS_PER_STREAM) throw badRequest(`a stream takes at most ${MAX_TOPICS_PER_STREAM} topics`);
}

/** Parses a topic list (POST body or `?subscribe=`), within the limits of one stream. */
export async function parseTopics(ctx: AppContext, raw: unknown, p: Principal): Promise<Topic[]> {
  if (!Array.isArray(raw)) throw badRequest("subscriptions must be an array of topics");
  checkTopicCount(raw);
  const topics: Topic[] = [];
  const queries = new Set<string>();
  let likeChars = 0;
  for (const t of raw) {
    const topic = await parseTopic(ctx, t, p);
    if ((likeChars += topic.likeChars ?? 0) > MAX_LIKE_CHARS_PER_STREAM)
      throw badRequest(`a stream's topics hold at most ${MAX_LIKE_CHARS_PER_STREAM} characters of like patterns in all`);
    const query = topic.filter?.query;
    if (query && queries.add(`${topic.collection}\u0000${query.key}`).size > MAX_QUERY_FILTERS_PER_STREAM)
      throw badRequest(`a stream takes at most ${MAX_QUERY_FILTERS_PER_STREAM} different filters on many or many_via fields`);
    topics.push(topic);
  }
  return topics;
}

/** Topic names of `?subscribe=posts,comments/<id>`. */
export function splitSubscribeParam(raw: string | null): string[] {
  return (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
