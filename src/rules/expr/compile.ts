import { col, exists, FALSE, reservedAlias, TRUE, val, type Bound, type Column, type ColumnType, type CompareOp, type Cond, type ElementKind, type Operand as SqlOperand } from "../../db/condition.ts";
import { q } from "../../db/ident.ts";
import type { CheckedRule, Hop, Operand, Term } from "./check.ts";
import { fold, likePattern, type Kernel } from "./values.ts";

// A checked rule → a condition (db/condition.ts) for the request at hand. What the request knows (`@auth.*`,
// `@now`, `@request.body.*`, literals) is folded first: a comparison of two known values is decided here
// (values.ts), so `@auth.roles ?= 'editor'` is TRUE or FALSE before any SQL. The record's fields are columns of
// the outer query (compileRule) or, for a record in memory, known values too (decideRule): one compiler, so the
// database and memory answer alike. Relation paths and `@exists` become correlated EXISTS over active rows; a
// path's target must also be one the caller may read (its collection's read rule, compiled into the EXISTS): a
// hidden target is null, as a missing one. A path in a target rule that leads back into a collection whose read
// rule is being compiled already reads its target as hidden; a rule that would compile more than
// MAX_TARGET_RULES target rules holds for no record (fail closed).
//
// The condition is TRUE exactly where the rule holds, and FALSE or NULL elsewhere: in a WHERE (or a CASE) NULL
// counts as FALSE, and a rule's AND and OR never negate, so SQL's unknown never leaks. `!` is pushed down to the
// comparisons, each of which is negated in a form that is TRUE where the comparison is false (`x IS NULL OR
// NOT (x < ?)`, NOT EXISTS).

/** The signed-in user as a rule sees them: read from the user row at the request, not from the token. */
export interface RuleAuth {
  id: string;
  email: string | null;
  verified: boolean;
  roles: readonly string[];
  metadata: Readonly<Record<string, unknown>>;
}

/** What a request gives a rule: the caller (null: anonymous), the time (ms) and, in create and update rules, the body. */
export interface RuleEnv {
  auth: RuleAuth | null;
  now: number;
  body?: Readonly<Record<string, unknown>> | null;
}

/**
 * The condition a row of the rule's collection must meet, its columns qualified with `table` (the quoted table
 * name or alias of the outer query; default the collection's quoted name). `negate`: the condition "the rule
 * does not hold", TRUE exactly where it does not.
 */
export function compileRule(rule: CheckedRule, env: RuleEnv, opts: { table?: string; negate?: boolean } = {}): Cond {
  const table = opts.table ?? q(rule.collection);
  return new Compiler(env, { q: table }).whole(rule.term, opts.negate ?? false);
}

/**
 * The rule decided for a record in memory (as it would be stored, or as a change event carries it): true, false,
 * or the condition that only the database can decide (relation paths, `@exists`), with the record's values bound
 * (see settle.ts).
 */
export function decideRule(rule: CheckedRule, record: Readonly<Record<string, unknown>>, env: RuleEnv): boolean | Cond {
  const c = new Compiler(env, { record }).whole(rule.term, false);
  return c.k === "true" ? true : c.k === "false" ? false : c;
}

/**
 * Whether a rule reads nothing of the caller but `@auth.id`, and that nowhere a column could not stand for it (a
 * `~` pattern is matched from known text only): then one statement decides it for many users at once
 * (compileRuleForUsers, decideRuleForUsers), the id being a column of the set of users asked about.
 */
export function readsOnlyAuthId(rule: CheckedRule): boolean {
  let only = onlyAuthId.get(rule);
  if (only === undefined) onlyAuthId.set(rule, (only = reachedRules(rule).every((r) => termReadsOnlyId(r.term))));
  return only;
}

const onlyAuthId = new WeakMap<CheckedRule, boolean>();

/**
 * Whether who asks may change the rule's answer: it reads `@auth`, or a path's target rule does (then an
 * anonymous caller it refuses is told to sign in).
 */
export function readsAuth(rule: CheckedRule): boolean {
  let reads = authReaders.get(rule);
  if (reads === undefined) authReaders.set(rule, (reads = reachedRules(rule).some((r) => !!r.readsAuth)));
  return reads;
}

const authReaders = new WeakMap<CheckedRule, boolean>();

/**
 * The rule and every target read rule its paths reach, through the target rules' own paths, each once. More
 * than a compilation may use (it cuts a path back into a collection whose rule it is compiling): what is asked
 * of them holds for all that a compilation can read.
 */
function reachedRules(rule: CheckedRule): CheckedRule[] {
  const seen = new Set<CheckedRule>([rule]);
  const out = [rule];
  for (let i = 0; i < out.length; i++)
    for (const r of targetRules(out[i]!.term))
      if (!seen.has(r)) {
        seen.add(r);
        out.push(r);
      }
  return out;
}

/** The read rules of the targets of a term's relation paths. */
function targetRules(t: Term, out: CheckedRule[] = []): CheckedRule[] {
  const operand = (o: Operand) => {
    if (o.k === "field" || o.k === "links") for (const hop of o.hops) out.push(hop.read());
  };
  switch (t.k) {
    case "const":
      break;
    case "and":
    case "or":
      for (const x of t.of) targetRules(x, out);
      break;
    case "not":
      targetRules(t.x, out);
      break;
    case "null":
      operand(t.a);
      break;
    case "cmp":
      operand(t.a);
      operand(t.b);
      break;
    case "exists":
      targetRules(t.where, out);
      break;
  }
  return out;
}

function termReadsOnlyId(t: Term): boolean {
  switch (t.k) {
    case "const":
      return true;
    case "and":
    case "or":
      return t.of.every(termReadsOnlyId);
    case "not":
      return termReadsOnlyId(t.x);
    case "null":
      return operandFits(t.a);
    case "cmp":
      if ((t.op === "~" || t.op === "!~") && (t.a.k === "auth" || t.b.k === "auth")) return false;
      return operandFits(t.a) && operandFits(t.b);
    case "exists":
      return termReadsOnlyId(t.where);
  }
}

const operandFits = (o: Operand) => o.k !== "meta" && (o.k !== "auth" || o.key === "id");

/**
 * compileRule for every signed-in caller at once: `@auth.id` is the text column `id` (see readsOnlyAuthId; the
 * rule may read nothing else of the caller, and is read with no request body).
 */
export function compileRuleForUsers(rule: CheckedRule, now: number, id: Column, opts: { table?: string } = {}): Cond {
  return new Compiler({ auth: null, now }, { q: opts.table ?? q(rule.collection) }, id).whole(rule.term, false);
}

/** decideRule for every signed-in caller at once, `@auth.id` being the text column `id` (see compileRuleForUsers). */
export function decideRuleForUsers(rule: CheckedRule, record: Readonly<Record<string, unknown>>, now: number, id: Column): boolean | Cond {
  const c = new Compiler({ auth: null, now }, { record }, id).whole(rule.term, false);
  return c.k === "true" ? true : c.k === "false" ? false : c;
}

/** Where the fields of a scope are read: columns of a table (its quoted name or alias), or a record in memory. */
type Place = { q: string } | { record: Readonly<Record<string, unknown>> };

/** A relation hop: an EXISTS over `table` (as `alias`) whose row `link` selects. */
interface Wrap {
  table: string;
  alias: string;
  link: Cond;
}

/** An operand as the compilation sees it: a value known now, a column (reached through `wraps`), or many_via links. */
type Resolved =
  | { k: "known"; v: unknown }
  | { k: "col"; col: Column; wraps: Wrap[] }
  | { k: "links"; junction: string; holder: SqlOperand; wraps: Wrap[] };

/** A comparison and its negation, each TRUE exactly where it should hold (FALSE or NULL elsewhere). */
interface Pair {
  pos: Cond;
  neg: Cond;
}

const ALWAYS: Pair = { pos: TRUE, neg: FALSE };
const NEVER: Pair = { pos: FALSE, neg: TRUE };

/** Each operator as a kernel comparison, negated or not. */
const KERNELS: Record<string, [Kernel, boolean]> = {
  "=": ["=", false],
  "!=": ["=", true],
  "<": ["<", false],
  "<=": ["<=", false],
  ">": [">", false],
  ">=": [">=", false],
  "~": ["~", false],
  "!~": ["~", true],
  "?=": ["?=", false],
  "?!=": ["?!=", false],
};

/** `a op b` read as `b op' a`. */
const MIRROR: Partial<Record<CompareOp, CompareOp>> = { "<": ">", "<=": ">=", ">": "<", ">=": "<=" };

const known = (v: unknown): Resolved => ({ k: "known", v: v === undefined ? null : v });

/** Most target read rules compiled into one rule's paths (each may hold paths of its own). */
const MAX_TARGET_RULES = 16;

class Compiler {
  private n = 0;
  private places: Place[];
  /** The collections whose read rules are being compiled into a path's target (lower case). */
  private readonly targets = new Set<string>();
  private targetRules = 0;

  constructor(
    private readonly env: RuleEnv,
    root: Place,
    /** The column that holds the caller's id, when one statement asks for many callers (readsOnlyAuthId). */
    private readonly authId?: Column,
  ) {
    this.places = [root];
  }

  /** A fresh alias for a subquery: numbered in the order met, so one rule gives one statement text. */
  private alias(kind: string): string {
    return reservedAlias(kind, ++this.n);
  }

  term(t: Term, neg: boolean): Cond {
    switch (t.k) {
      case "const":
        return t.v !== neg ? TRUE : FALSE;
      case "and":
      case "or": {
        const parts = t.of.map((x) => this.term(x, neg));
        return (t.k === "and") !== neg ? allOf(parts) : anyOf(parts);
      }
      case "not":
        return this.term(t.x, !neg);
      case "null":
        // `x = null` is "not (x is not null)".
        return this.atom("notnull", !t.not, t.a, t.a, neg);
      case "cmp": {
        const [kernel, negated] = KERNELS[t.op]!;
        return this.atom(kernel, negated, t.a, t.b, neg);
      }
      case "exists": {
        const alias = this.alias("e");
        this.places.push({ q: alias });
        const where = this.term(t.where, false);
        this.places.pop();
        const found = where.k === "false" ? FALSE : exists(t.collection, alias, allOf([active(alias), where]));
        return neg ? not(found) : found;
      }
    }
  }

  private atom(kernel: Kernel, negated: boolean, a: Operand, b: Operand, neg: boolean): Cond {
    const flip = negated !== neg;
    const A = this.resolve(a);
    const B = kernel === "notnull" ? A : this.resolve(b);
    if (A.k === "known" && B.k === "known") return fold(kernel, A.v, B.v) !== flip ? TRUE : FALSE;
    const pair = this.wrapped(kernel, A, B);
    return flip ? pair.neg : pair.pos;
  }

  private resolve(o: Operand): Resolved {
    const auth = this.env.auth;
    switch (o.k) {
      case "lit":
        return known(o.v);
      case "now":
        return known(this.env.now);
      case "auth":
        if (this.authId) {
          if (o.key !== "id") throw new Error(`a rule compiled for many callers reads @auth.${o.key}`);
          return { k: "col", col: this.authId, wraps: [] };
        }
        if (!auth) return known(null);
        return known(o.key === "id" ? auth.id : o.key === "email" ? auth.email : o.key === "verified" ? auth.verified : auth.roles);
      case "meta":
        if (this.authId) throw new Error("a rule compiled for many callers reads @auth.metadata");
        return known(lookup(auth?.metadata, o.keys));
      case "body":
        return known(lookup(this.env.body, [o.field]));
      case "isset":
        return known(!!this.env.body && Object.hasOwn(this.env.body, o.field));
      case "field":
      case "links":
        return this.column(o);
    }
  }

  /** A field of a scope's record, through its relation hops. A hop from a known null (or a non-text) is a missing target: null. */
  private column(o: Extract<Operand, { k: "field" | "links" }>): Resolved {
    let place = this.places[o.scope]!;
    const wraps: Wrap[] = [];
    for (const hop of o.hops) {
      const source = read(place, hop.field, "text");
      if (source.k === "known" && typeof source.v !== "string") return known(null);
      const alias = this.alias("r");
      const id = col(alias, "_id", "text");
      const link: Cond = { k: "cmp", op: "=", a: id, b: source.k === "known" ? val(source.v as string) : source.col };
      wraps.push({ table: hop.to, alias, link: allOf([link, active(alias), this.readable(hop, alias)]) });
      place = { q: alias };
    }
    if (o.k === "field") {
      const r = read(place, o.name, o.type);
      return r.k === "known" ? r : { k: "col", col: r.col, wraps };
    }
    if ("record" in place) {
      // A record in memory carries its many_via fields as arrays of ids (as reads return them).
      const ids = place.record[o.field];
      if (Array.isArray(ids)) return known(ids);
      const id = place.record._id;
      return typeof id === "string" ? { k: "links", junction: o.junction, holder: val(id), wraps } : known(null);
    }
    return { k: "links", junction: o.junction, holder: col(place.q, "_id", "text"), wraps };
  }

  /** The whole rule's condition (`negate`: where it does not hold); a rule past MAX_TARGET_RULES holds nowhere. */
  whole(t: Term, negate: boolean): Cond {
    const c = this.term(t, negate);
    // IMPORTANT: fail closed for the whole rule: a path read as null under a negation could grant.
    if (this.targetRules > MAX_TARGET_RULES) return negate ? TRUE : FALSE;
    return c;
  }

  /** The condition that the caller may read the row `alias` of a hop's target: its collection's read rule over it. */
  private readable(hop: Hop, alias: string): Cond {
    const rule = hop.read();
    if (rule.term.k === "const") return rule.term.v ? TRUE : FALSE;
    const key = hop.to.toLowerCase();
    if (this.targets.has(key)) return FALSE;
    if (++this.targetRules > MAX_TARGET_RULES) return FALSE;
    const places = this.places;
    this.targets.add(key);
    this.places = [{ q: alias }];
    try {
      // A read rule names no request body (it is 400 when set), so the request's does not reach it.
      return this.term(rule.term, false);
    } finally {
      this.places = places;
      this.targets.delete(key);
    }
  }

  /** The kernel comparison inside the EXISTS of its operands' relation hops. */
  private wrapped(kernel: Kernel, A: Resolved, B: Resolved): Pair {
    const wa = wrapsOf(A);
    const wb = kernel === "notnull" ? [] : wrapsOf(B);
    if (!wa.length && !wb.length) return this.plain(kernel, A, B);
    const a = unwrapped(A);
    const b = kernel === "notnull" ? a : unwrapped(B);
    let inner: Cond;
    if (kernel === "?!=" && wb.length) {
      // The one comparison that holds for a null value (some element differs from it): a missing target too.
      const missing = not(nest(wb, TRUE));
      inner = anyOf([nest(wb, this.plain(kernel, a, b).pos), allOf([missing, this.plain(kernel, a, known(null)).pos])]);
      inner = nest(wa, inner);
    } else inner = nest([...wa, ...wb], this.plain(kernel, a, b).pos);
    return { pos: inner, neg: not(inner) };
  }

  /** The kernel comparison of operands without hops (at most one of them known). */
  private plain(kernel: Kernel, A: Resolved, B: Resolved): Pair {
    if (A.k === "known" && B.k === "known") return fold(kernel, A.v, B.v) ? ALWAYS : NEVER;
    switch (kernel) {
      case "notnull": {
        if (A.k !== "col") return NEVER;
        return { pos: { k: "null", a: A.col, not: true }, neg: { k: "null", a: A.col, not: false } };
      }
      case "=":
      case "<":
      case "<=":
      case ">":
      case ">=": {
        let op: CompareOp = kernel;
        if (A.k === "known") {
          [A, B] = [B, A];
          op = MIRROR[op] ?? op;
        }
        if (A.k !== "col") return NEVER;
        const a = A.col;
        if (B.k === "known") {
          const bound = bind(B.v, a.type);
          if (bound === undefined) return NEVER;
          const cmp: Cond = { k: "cmp", op, a, b: val(bound) };
          if (op === "=") return { pos: cmp, neg: { k: "distinct", a, b: val(bound) } };
          return { pos: cmp, neg: anyOf([isNull(a), not(cmp)]) };
        }
        if (B.k !== "col") return NEVER;
        const cmp: Cond = { k: "cmp", op, a, b: B.col };
        return { pos: cmp, neg: anyOf([isNull(a), isNull(B.col), not(cmp)]) };
      }
      case "~": {
        if (A.k !== "col" || B.k !== "known" || typeof B.v !== "string") return NEVER;
        const like: Cond = { k: "like", a: A.col, pattern: likePattern(B.v) };
        return { pos: like, neg: anyOf([isNull(A.col), not(like)]) };
      }
      case "?=":
      case "?!=":
        return this.element(kernel === "?!=", A, B);
    }
  }

  /** `?=` (`?!=` with `differs`): some element of the list A equals (differs from) B. */
  private element(differs: boolean, A: Resolved, B: Resolved): Pair {
    const definite = (pos: Cond): Pair => ({ pos, neg: not(pos) });
    if (A.k === "col") {
      if (B.k === "known") {
        const kind = kindOf(B.v);
        // No element equals a null (or a list): none matches, and every element differs from it.
        if (!kind) return differs ? definite({ k: "element", array: A.col, value: val(null), kind: "text", differs }) : NEVER;
        return definite({ k: "element", array: A.col, value: val(scalar(B.v as string | number | boolean)), kind, differs });
      }
      if (B.k !== "col") return NEVER;
      const kind = columnKind(B.col.type);
      return kind ? definite({ k: "element", array: A.col, value: B.col, kind, differs }) : NEVER;
    }
    if (A.k === "links") {
      const j = this.alias("j");
      const from: Cond = { k: "cmp", op: "=", a: col(j, "from_id", "text"), b: A.holder };
      const to = col(j, "to_id", "text");
      let value: SqlOperand;
      if (B.k === "known") {
        if (typeof B.v !== "string") return differs ? definite(exists(A.junction, j, from)) : NEVER;
        value = val(B.v);
      } else if (B.k === "col") value = B.col;
      else return NEVER;
      const test: Cond = differs ? { k: "distinct", a: to, b: value } : { k: "cmp", op: "=", a: to, b: value };
      return definite(exists(A.junction, j, allOf([from, test])));
    }
    // A list known now, a column on the right.
    if (B.k !== "col") return NEVER;
    const list = Array.isArray(A.v) ? (A.v as unknown[]) : [];
    const kind = columnKind(B.col.type);
    if (!kind || !list.length) return NEVER;
    const js = JS_TYPE[kind];
    const values = [...new Set(list.filter((e) => typeof e === js))] as (string | number | boolean)[];
    const b = B.col;
    if (differs) {
      // An element of another type differs from any value; two different ones, from every value.
      if (values.length < list.length || values.length > 1) return ALWAYS;
      const one = val(scalar(values[0]!));
      return { pos: { k: "distinct", a: b, b: one }, neg: { k: "cmp", op: "=", a: b, b: one } };
    }
    if (!values.length) return NEVER;
    const pos: Cond = kind === "text" ? { k: "oneOf", a: b, values: values as string[] } : { k: "in", a: b, values: values.map(scalar) };
    return { pos, neg: anyOf([isNull(b), not(pos)]) };
  }
}

const JS_TYPE: Record<ElementKind, string> = { text: "string", number: "number", boolean: "boolean" };

/** The JSON kind of a scalar known now, or null for anything else. */
function kindOf(v: unknown): ElementKind | null {
  return typeof v === "string" ? "text" : typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean" : null;
}

/** The JSON kind the values of a column compare as (json columns: none). */
function columnKind(type: ColumnType): ElementKind | null {
  return type === "text" ? "text" : type === "number" || type === "integer" ? "number" : type === "boolean" ? "boolean" : null;
}

/** A scalar as bound: booleans as 1/0, as boolean columns hold them. */
function scalar(v: string | number | boolean): Bound {
  return typeof v === "boolean" ? (v ? 1 : 0) : v;
}

/** A known value as a parameter compared with a column of `type`; undefined where no value of that column can equal it. */
function bind(v: unknown, type: ColumnType): Bound | undefined {
  switch (type) {
    case "text":
      return typeof v === "string" ? v : undefined;
    case "number":
    case "integer":
      return typeof v === "number" ? v : undefined;
    case "boolean":
      return typeof v === "boolean" ? (v ? 1 : 0) : undefined;
    case "json":
      return undefined;
  }
}

/** A field of a place: a column, or the record's value as a column would hold it (a missing field is null). */
function read(place: Place, name: string, type: ColumnType): { k: "known"; v: unknown } | { k: "col"; col: Column } {
  if ("q" in place) return { k: "col", col: col(place.q, name, type) };
  const v = place.record[name];
  if (v === undefined || v === null) return { k: "known", v: null };
  // A boolean as a stored row holds it (1/0) reads as a boolean.
  if (type === "boolean" && typeof v === "number") return { k: "known", v: v !== 0 };
  return { k: "known", v };
}

/**
 * The value at `keys` in a JSON object, else null. Own properties of plain objects only: a key such as
 * `constructor` or `__proto__` names nothing that the object does not hold itself.
 */
function lookup(obj: unknown, keys: readonly string[]): unknown {
  let cur = obj;
  for (const k of keys) {
    if (!cur || typeof cur !== "object" || Array.isArray(cur) || !Object.hasOwn(cur, k)) return null;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur === undefined ? null : cur;
}

function wrapsOf(r: Resolved): Wrap[] {
  return r.k === "known" ? [] : r.wraps;
}

function unwrapped(r: Resolved): Resolved {
  return r.k === "known" ? r : { ...r, wraps: [] };
}

/** `inner` inside the EXISTS of each hop, outermost first. */
function nest(wraps: readonly Wrap[], inner: Cond): Cond {
  let c = inner;
  for (let i = wraps.length - 1; i >= 0; i--) {
    const w = wraps[i]!;
    // A target the caller may read none of is missing.
    if (c.k === "false" || w.link.k === "false") return FALSE;
    c = exists(w.table, w.alias, allOf([w.link, c]));
  }
  return c;
}

/** The row of `alias` is active (not soft-deleted). */
function active(alias: string): Cond {
  return { k: "null", a: col(alias, "_deleted_at", "integer"), not: false };
}

function isNull(a: Column): Cond {
  return { k: "null", a, not: false };
}

/** AND, flattened, with TRUE dropped and FALSE deciding. */
function allOf(parts: readonly Cond[]): Cond {
  const of: Cond[] = [];
  for (const c of parts) {
    if (c.k === "false") return FALSE;
    if (c.k === "true") continue;
    if (c.k === "and") of.push(...c.of);
    else of.push(c);
  }
  return of.length === 0 ? TRUE : of.length === 1 ? of[0]! : { k: "and", of };
}

/** OR, flattened, with FALSE dropped and TRUE deciding. */
function anyOf(parts: readonly Cond[]): Cond {
  const of: Cond[] = [];
  for (const c of parts) {
    if (c.k === "true") return TRUE;
    if (c.k === "false") continue;
    if (c.k === "or") of.push(...c.of);
    else of.push(c);
  }
  return of.length === 0 ? FALSE : of.length === 1 ? of[0]! : { k: "or", of };
}

/** NOT of a condition: one that is never NULL (an EXISTS, an element test), or one whose NULL the caller covers (`x IS NULL OR NOT (...)`). */
function not(c: Cond): Cond {
  if (c.k === "true") return FALSE;
  if (c.k === "false") return TRUE;
  return { k: "not", c };
}
