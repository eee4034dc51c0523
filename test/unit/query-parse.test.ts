import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/errors.ts";
import { listOptions } from "../../src/http/routes/records.ts";
import { parseFilters, parseListQuery as parseWithOptions, parseSort } from "../../src/query/parse.ts";
import { toMatchQuery as matchQueryOf } from "../../src/db/sqlite-dialect.ts";
import { tokenize } from "../../src/search/syntax.ts";

const p = (s: string) => new URLSearchParams(s);
/** A user's search text as SQLite's FTS5 query text. */
const toMatchQuery = (raw: string) => matchQueryOf(tokenize(raw));
/** A list's query string as the route reads it: its scalars checked by the schema, the rest by the query language. */
const parseListQuery = (params: URLSearchParams) => parseWithOptions(params, listOptions.parse(params));

function status(fn: () => unknown): number {
  try {
    fn();
    return 200;
  } catch (err) {
    return err instanceof AppError ? err.status : 500;
  }
}

describe("query string parsing", () => {
  test("a colon filter splits on the first two colons only", () => {
    expect(parseFilters(p("filter=t:eq:a:b"))).toEqual([{ field: "t", op: "eq", value: "a:b" }]);
  });

  test("bracket filters default to eq and keep their order among colon filters", () => {
    expect(parseFilters(p("filter[a]=1&filter=b:gt:2&filter[c][like]=x"))).toEqual([
      { field: "a", op: "eq", value: "1" },
      { field: "b", op: "gt", value: "2" },
      { field: "c", op: "like", value: "x" },
    ]);
  });

  test("sort accepts all four spellings, repeated and comma-separated", () => {
    expect(parseSort(p("sort=a,-b&sort=c:desc&sort=d:ASC"))).toEqual([
      { field: "a", desc: false },
      { field: "b", desc: true },
      { field: "c", desc: true },
      { field: "d", desc: false },
    ]);
  });

  test("defaults: limit 50, page 1, no cursor, no sort, every field", () => {
    expect(parseListQuery(p(""))).toMatchObject({ limit: 50, page: 1, after: null, sort: [], fields: null, search: null, expand: [] });
  });

  test("limit outside 1..500 and unknown operators are 400", () => {
    for (const q of ["limit=0", "limit=501", "limit=1.5", "page=0", "filter=a:between:1", "filter=a", "sort=a:sideways"])
      expect(status(() => parseListQuery(p(q)))).toBe(400);
  });
});

describe("full-text query sanitising", () => {
  test("words, prefixes, phrases, operators and parentheses pass through", () => {
    expect(toMatchQuery('run* AND "brown fox" OR (dog NOT cat)')).toBe('run* AND "brown fox" OR ( dog NOT cat )');
  });

  test("punctuation inside a word is quoted instead of read as syntax", () => {
    expect(toMatchQuery("e-mail title:x a.b*")).toBe('"e-mail" "title:x" "a.b"*');
  });

  test("an unclosed quote, a lone star or nothing at all is 400", () => {
    for (const q of ['"open', "*", "   "]) expect(status(() => toMatchQuery(q))).toBe(400);
  });
});
