// Identifiers reach SQL only after passing a name check (collections/types.ts NAME_RE) or being one of our
// own `_`-prefixed system names, and are always double-quoted. Both engines quote the same way; PostgreSQL's
// limit on their length is applied by its engine (pg-placeholders.ts).

const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Quotes an identifier that has already been validated; throws if it was not. */
export function q(name: string): string {
  if (!IDENT_RE.test(name)) throw new Error(`refusing unsafe identifier ${JSON.stringify(name)}`);
  return `"${name}"`;
}
