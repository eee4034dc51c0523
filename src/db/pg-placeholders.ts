import { sha256 } from "../crypto.ts";

/** PostgreSQL's longest identifier, in bytes (longer ones it cuts silently); SQLite takes any length. */
export const PG_MAX_IDENT = 63;

/**
 * The identifier PostgreSQL is given for one of ours: a longer name (a 64-character collection or field
 * name, an index name built from them) is cut and ends in a hash of the whole, so two long names with the
 * same start never meet, and every node and tool derives the same one. Our names are ASCII.
 */
export function pgIdentifier(name: string): string {
  if (name.length <= PG_MAX_IDENT) return name;
  return `${name.slice(0, PG_MAX_IDENT - 9)}_${sha256(name).slice(0, 8)}`;
}

export interface Positional {
  text: string;
  count: number;
  renamed?: Map<string, string>;
}

/**
 * Rewrites the `?` placeholders of the storage interface to PostgreSQL's `$1..$n`, in order. A `?`
 * inside a quoted literal ('…', E'…', $tag$…$tag$), a quoted identifier ("…") or a comment is left
 * alone. (So SQL for PostgreSQL cannot use the jsonb `?` operators: use `jsonb_exists()` instead.)
 * A numbered `?N` (SQLite's form for a value used more than once) is `$N`; `count` is then the highest N.
 * A quoted identifier longer than PostgreSQL takes is shortened (see pgIdentifier); `renamed` then maps
 * each short name back to the one in the statement, so answers carry the names that were asked for.
 * `placeholders` false leaves `?` alone (DDL run as is).
 */
export function toPositional(sql: string, placeholders = true): Positional {
  let out = "";
  let n = 0;
  let i = 0;
  let renamed: Map<string, string> | undefined;
  const len = sql.length;
  while (i < len) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === "?" && placeholders) {
      const digits = /^\d+/.exec(sql.slice(i + 1, i + 6));
      if (digits) {
        out += `$${digits[0]}`;
        n = Math.max(n, Number(digits[0]));
        i += 1 + digits[0].length;
      } else {
        out += `$${++n}`;
        i++;
      }
      continue;
    }
    let end = i + 1;
    if (c === "'" || c === '"') {
      // E'…' strings take backslash escapes; a doubled quote is one quote in both kinds.
      const backslash = c === "'" && i > 0 && /[eE]/.test(sql[i - 1]!) && !/[\w$]/.test(sql[i - 2] ?? "");
      end = i + 1;
      while (end < len) {
        if (backslash && sql[end] === "\\") end += 2;
        else if (sql[end] === c && sql[end + 1] === c) end += 2;
        else if (sql[end] === c) break;
        else end++;
      }
      end = Math.min(end + 1, len);
      if (c === '"' && end - i - 2 > PG_MAX_IDENT) {
        const name = sql.slice(i + 1, end - 1).replaceAll('""', '"');
        const short = pgIdentifier(name);
        (renamed ??= new Map()).set(short, name);
        out += `"${short.replaceAll('"', '""')}"`;
        i = end;
        continue;
      }
    } else if (c === "-" && next === "-") {
      const nl = sql.indexOf("\n", i);
      end = nl === -1 ? len : nl;
    } else if (c === "/" && next === "*") {
      const close = sql.indexOf("*/", i + 2);
      end = close === -1 ? len : close + 2;
    } else if (c === "$" && !/[\w$]/.test(sql[i - 1] ?? "")) {
      // A dollar-quoted string: $$…$$ or $tag$…$tag$ (not a $1 parameter, which starts with a digit).
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        end = close === -1 ? len : close + tag[0].length;
      }
    }
    out += sql.slice(i, end);
    i = end;
  }
  return renamed ? { text: out, count: n, renamed } : { text: out, count: n };
}
