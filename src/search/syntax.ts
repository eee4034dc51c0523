import type { SearchToken } from "../db/dialect.ts";
import { badRequest } from "../errors.ts";

// The search syntax both engines take (CONTRACT §4 `search`): words, `prefix*`, "quoted phrases", AND,
// OR, NOT (upper case) and parentheses; a space between terms means AND. One tokenizer for both, so a
// mistake is the same 400 with the same message on either: SQLite's FTS5 query is written from the
// tokens by toMatchQuery (db/sqlite-dialect.ts), PostgreSQL's tsquery by toTsQuery (db/pg-fts.ts).

/** A term, an operator or a parenthesis of the search text. */
export type Token = SearchToken;

/** A 400 for a malformed search. */
export const invalidSearch = (why: string) => badRequest(`invalid search query: ${why}`);

function wordsOf(text: string): string[] {
  return text.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

/** Splits a user's search text into terms, operators and parentheses; 400 for a broken quote or a lone `*`, or nothing at all. */
export function tokenize(raw: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < raw.length) {
    const c = raw[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "(" || c === ")") {
      out.push({ kind: c, text: c });
      i++;
    } else if (c === '"') {
      const end = raw.indexOf('"', i + 1);
      if (end < 0) throw invalidSearch("a quote is not closed");
      const phrase = raw.slice(i + 1, end);
      i = end + 1;
      const prefix = raw[i] === "*";
      if (prefix) i++;
      out.push({ kind: "term", raw: phrase, quoted: true, prefix, words: wordsOf(phrase), text: `"${phrase}"` });
    } else {
      let j = i;
      while (j < raw.length && !/[\s"()]/.test(raw[j]!)) j++;
      const word = raw.slice(i, j);
      i = j;
      if (word === "AND" || word === "OR" || word === "NOT") {
        out.push({ kind: word, text: word });
        continue;
      }
      const bare = word.replace(/\*+$/, "");
      if (!bare) throw invalidSearch("* must follow a word");
      out.push({ kind: "term", raw: bare, quoted: false, prefix: bare !== word, words: wordsOf(bare), text: word });
    }
  }
  if (!out.length) throw invalidSearch("it is empty");
  return out;
}
