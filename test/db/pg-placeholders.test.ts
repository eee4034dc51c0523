import { describe, expect, test } from "bun:test";
import { toPositional } from "../../src/db/pg-placeholders.ts";

// `?` placeholders become $1..$n for PostgreSQL; a `?` that is text, a name or a comment stays as it is.
describe("placeholders for PostgreSQL", () => {
  const cases: [string, string, string, number][] = [
    ["plain placeholders in order", "SELECT * FROM t WHERE a = ? AND b IN (?, ?)", "SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)", 3],
    ["a string literal, with a doubled quote", "SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , $1", 1],
    ["a quoted identifier", 'SELECT "a?b" FROM t WHERE x = ?', 'SELECT "a?b" FROM t WHERE x = $1', 1],
    ["an E'' string with a backslash-escaped quote", "SELECT E'\\'?', ?", "SELECT E'\\'?', $1", 1],
    ["a dollar-quoted string", "SELECT $$ ? $$, $tag$ '?' $tag$, ?", "SELECT $$ ? $$, $tag$ '?' $tag$, $1", 1],
    ["line and block comments", "SELECT ? -- why?\n, /* what? */ ?", "SELECT $1 -- why?\n, /* what? */ $2", 2],
    ["no placeholder", "SELECT 1", "SELECT 1", 0],
    ["an unterminated literal is left to the server to reject", "SELECT 'a ?", "SELECT 'a ?", 0],
  ];
  for (const [name, input, text, count] of cases) {
    test(name, () => {
      expect(toPositional(input)).toEqual({ text, count });
    });
  }
});
