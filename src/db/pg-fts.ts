import type { SearchToken as Token } from "./dialect.ts";
import { badRequest } from "../errors.ts";

// Full text on PostgreSQL: the terms of the search syntax (search/syntax.ts: words, `prefix*`, "quoted phrases",
// AND, OR, NOT, parentheses; a space between terms means AND) turned into a `to_tsquery` text, searched against a
// generated `tsvector` column with a GIN index.

/**
 * The text search configuration (migration 0014_fts_words): `english`'s parser and stemmer without its stop words,
 * accents ignored where the `unaccent` extension is there: every word a record holds is found, as on SQLite.
 */
export const FTS_CONFIG = "baas_fts";

/** A 400 for a malformed search, as search/syntax.ts words it. */
const invalidSearch = (why: string) => badRequest(`invalid search query: ${why}`);

/** Joins two operands; a missing one (a term without letters or digits) drops out, as in FTS5. */
function join(left: string | null, op: "&" | "|", right: string | null): string | null {
  if (left === null) return right;
  if (right === null) return left;
  return `(${left} ${op} ${right})`;
}

/**
 * Parses with the precedence of SQLite's FTS5: NOT (binary: `a NOT b`) binds tighter than AND (written
 * or implied), which binds tighter than OR. Returns a fully parenthesised tsquery text, or null when no
 * term has a word.
 */
function parse(tokens: readonly Token[]): string | null {
  let pos = 0;
  const peek = () => tokens[pos];
  const fail = (): never => {
    throw invalidSearch(`syntax error near "${peek()?.text ?? ""}"`);
  };
  const primary = (): string | null => {
    const t = peek();
    if (!t) return fail();
    if (t.kind === "(") {
      pos++;
      const inner = orExpr();
      if (peek()?.kind !== ")") fail();
      pos++;
      return inner;
    }
    if (t.kind !== "term") return fail();
    pos++;
    // A term with no letter or digit (an empty phrase, "--") is ignored, as FTS5 ignores it.
    if (!t.words.length) return null;
    const lexemes = t.words.map((w, k) => (t.prefix && k === t.words.length - 1 ? `${w}:*` : w));
    return lexemes.length === 1 ? lexemes[0]! : `(${lexemes.join(" <-> ")})`;
  };
  const notExpr = (): string | null => {
    let left = primary();
    while (peek()?.kind === "NOT") {
      pos++;
      const right = primary();
      if (left !== null && right !== null) left = `(${left} & !${right})`;
    }
    return left;
  };
  const andExpr = (): string | null => {
    let left = notExpr();
    for (;;) {
      const t = peek();
      if (t?.kind === "AND") pos++;
      else if (!(t?.kind === "term" || t?.kind === "(")) return left;
      left = join(left, "&", notExpr());
    }
  };
  const orExpr = (): string | null => {
    let left = andExpr();
    while (peek()?.kind === "OR") {
      pos++;
      left = join(left, "|", andExpr());
    }
    return left;
  };
  const result = orExpr();
  if (pos < tokens.length) fail();
  return result;
}

/**
 * Turns the terms of a user's search text into the text of `to_tsquery(FTS_CONFIG, ?)`. Every word is reduced
 * to its letters and digits (so nothing in it is read as tsquery syntax); a word with punctuation in it, like
 * `e-mail`, is a phrase of its parts, as on SQLite. Structural mistakes are 400. "" (no term with a word)
 * matches nothing.
 */
export function toTsQuery(tokens: readonly Token[]): string {
  return parse(tokens) ?? "";
}

/** A PostgreSQL identifier, quoted. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The expression of a collection's generated `tsvector` column: its text fields joined by spaces, ASCII
 * punctuation read as a space (the text columns' "C" collation: [[:punct:]] is the same on every cluster),
 * stemmed with FTS_CONFIG. A search's words are split at every character that is not a
 * letter or digit (search/syntax.ts), as SQLite's tokenizer splits the text; PostgreSQL's parser would keep
 * an e-mail address, a host name or a URL as one token, which none of those words would match.
 */
export function tsvectorExpr(fields: readonly string[]): string {
  if (!fields.length) return `to_tsvector('${FTS_CONFIG}'::regconfig, '')`;
  const body = fields.map((f) => `coalesce(${quoteIdent(f)}, '')`).join(" || ' ' || ");
  return `to_tsvector('${FTS_CONFIG}'::regconfig, regexp_replace(${body}, '[[:punct:]]+', ' ', 'g'))`;
}
