import type { ColumnType } from "../../db/condition.ts";
import { junctionTable, storedType, type Collection, type Operation, type Relation } from "../../catalog/types.ts";
import { RuleError, quoted, type CompareOperator, type Literal, type Node, type OperandNode } from "./ast.ts";

// A parsed rule checked against the catalog, for one collection and one operation: every name resolved to a
// column of a collection (through `one` relations), a many_via junction, or a value the request gives
// (`@auth.*`, `@now`, `@request.body.*`); operators checked against the types of what they compare. The result
// (CheckedRule) holds no catalog object (a path reaches its target's read rule through a function), so it stays
// valid as long as the catalog it was checked against.

/** What the checker needs of the catalog: collections and relations by name, case-insensitive. */
export interface RuleCatalog {
  collection(name: string): Collection | undefined;
  relation(collection: string, field: string): Relation | undefined;
  /** Every collection (for rulesNamingField). */
  collections(): Iterable<Collection>;
}

/**
 * One step of a relation path: the `one` relation field of the collection before, the collection it points to,
 * and that collection's read rule (a target the caller may not read is null, CONTRACT §12), checked on first use.
 */
export interface Hop {
  field: string;
  to: string;
  read: () => CheckedRule;
}

/** The read rule of a collection, as checked against the same catalog (rule.ts ruleFor). */
export type ReadRuleOf = (col: Collection) => CheckedRule;

/** An operand, resolved. `scope` 0 is the record the rule is checked on, 1 the row of an `@exists`, 2 one nested in it. */
export type Operand =
  | { k: "lit"; v: Literal }
  | { k: "auth"; key: "id" | "email" | "verified" | "roles" }
  | { k: "meta"; keys: string[] }
  | { k: "now" }
  | { k: "body"; field: string }
  | { k: "isset"; field: string }
  /** A stored column `name`, of the scope's collection or (through `hops`) of a related one. */
  | { k: "field"; scope: number; hops: Hop[]; name: string; type: ColumnType }
  /** A many_via field: the ids its junction table links the record to. */
  | { k: "links"; scope: number; hops: Hop[]; field: string; junction: string };

/** A term, resolved. A comparison with the literal null is a `null` test; a lone boolean operand a comparison with true. */
export type Term =
  | { k: "const"; v: boolean }
  | { k: "and" | "or"; of: Term[] }
  | { k: "not"; x: Term }
  | { k: "cmp"; op: CompareOperator; a: Operand; b: Operand }
  | { k: "null"; a: Operand; not: boolean }
  | { k: "exists"; collection: string; where: Term };

/** A field a rule names (through a path, inside `@exists`, or as `@request.body.<field>`), as the catalog spells it. */
export interface NamedField {
  collection: string;
  field: string;
}

/** A rule ready to compile or evaluate (compile.ts). */
export interface CheckedRule {
  collection: string;
  op: Operation;
  term: Term;
  /** The fields the rule names, for refusing to rename or drop them. */
  names: NamedField[];
  /** The fields it reads as `@request.body.<field>` (lower case): an atomic operator on one is denied (see bodyDenies). */
  bodyFields?: string[];
  /** Set when it reads `@auth`: who asks may change its answer, so an anonymous caller it refuses is told to sign in (401). */
  readsAuth?: true;
  /** Set when the stored rule no longer checks against the catalog (its term is then `false`: it denies). */
  broken?: string;
}

/** What an operand holds, for the type checks. `ids`: a many_via field; `list`: @auth.roles; `any`: known at request time only. */
type ValueType = "text" | "number" | "boolean" | "json" | "ids" | "list" | "any" | "null";

/** The system fields a rule may name, and how their columns store them. */
const SYSTEM: Record<string, ColumnType> = { _id: "text", _owner_id: "text", _created_at: "integer", _updated_at: "integer" };

const BODY_FIELD_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const META_KEY_RE = /^[A-Za-z0-9_]{1,64}$/;
/** Most keys of an `@auth.metadata.<key>...` path (metadata nests at most 3 levels, CONTRACT §7). */
const MAX_META_KEYS = 3;
/** Most relations a path goes through. */
export const MAX_HOPS = 3;

/** Checks a parsed rule for `collection` and `op`; a RuleError names the first token that does not fit. */
export function checkExpression(catalog: RuleCatalog, collection: Collection, op: Operation, node: Node, readRule: ReadRuleOf): CheckedRule {
  const checker = new Checker(catalog, op, collection, readRule);
  const term = checker.term(node);
  return {
    collection: collection.name,
    op,
    term,
    names: checker.names,
    ...(checker.bodyFields.size ? { bodyFields: [...checker.bodyFields] } : {}),
    ...(checker.readsAuth ? { readsAuth: true as const } : {}),
  };
}

interface Typed {
  o: Operand;
  type: ValueType;
  node: OperandNode;
}

class Checker {
  readonly names: NamedField[] = [];
  readonly bodyFields = new Set<string>();
  readsAuth = false;
  private readonly seen = new Set<string>();
  /** The collections in scope: the rule's, then one per enclosing `@exists`. */
  private readonly scopes: Collection[];

  constructor(
    private readonly catalog: RuleCatalog,
    private readonly op: Operation,
    root: Collection,
    private readonly readRule: ReadRuleOf,
  ) {
    this.scopes = [root];
  }

  /** The read rule of `target`, checked once when a compilation first asks for it. */
  private readOf(target: Collection): () => CheckedRule {
    let rule: CheckedRule | undefined;
    return () => (rule ??= this.readRule(target));
  }

  private name(collection: string, field: string): void {
    const key = `${collection.toLowerCase()}\0${field.toLowerCase()}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.names.push({ collection, field });
  }

  term(node: Node): Term {
    switch (node.k) {
      case "and":
      case "or":
        return { k: node.k, of: node.of.map((n) => this.term(n)) };
      case "not":
        return { k: "not", x: this.term(node.x) };
      case "exists": {
        const target = this.catalog.collection(node.collection);
        if (!target) throw new RuleError(`unknown collection ${quoted(node.collection)} at ${node.collectionPos}`, node.collectionPos);
        this.scopes.push(target);
        const where = this.term(node.where);
        this.scopes.pop();
        return { k: "exists", collection: target.name, where };
      }
      case "bare": {
        const a = this.operand(node.a);
        if (a.o.k === "lit" && typeof a.o.v === "boolean") return { k: "const", v: a.o.v };
        if (a.type !== "boolean" && a.type !== "any")
          throw new RuleError(`expected a comparison after ${quoted(node.a.text)} at ${node.pos}: it is not a boolean`, node.pos);
        return { k: "cmp", op: "=", a: a.o, b: { k: "lit", v: true } };
      }
      case "cmp":
        return this.comparison(node.op, this.operand(node.a), this.operand(node.b), node.pos);
    }
  }

  private comparison(op: CompareOperator, a: Typed, b: Typed, pos: number): Term {
    const at = `${quoted(op)} at ${pos}`;
    const fail = (why: string) => new RuleError(`${at}: ${why}`, pos);
    const what = (t: Typed) => `${quoted(t.node.text)} (${describe(t.type)})`;
    if (op === "=" || op === "!=") {
      if (a.type === "null" && b.type === "null") return { k: "const", v: op === "=" };
      if (a.type === "null" || b.type === "null") {
        const other = a.type === "null" ? b : a;
        if (other.type === "ids") throw fail(`${what(other)} holds links: test them with ?= or ?!=`);
        return { k: "null", a: other.o, not: op === "!=" };
      }
      for (const t of [a, b]) {
        if (t.type === "json") throw fail(`${what(t)} compares only with null; test its elements with ?= or ?!=`);
        if (t.type === "ids" || t.type === "list") throw fail(`${what(t)} is a list: test its elements with ?= or ?!=`);
      }
      if (!compatible(a.type, b.type)) throw fail(`cannot compare ${what(a)} with ${what(b)}`);
      return { k: "cmp", op, a: a.o, b: b.o };
    }
    if (op === ">" || op === ">=" || op === "<" || op === "<=") {
      for (const t of [a, b]) {
        if (t.type === "null") throw fail("cannot order null: use = null or != null");
        if (t.type !== "text" && t.type !== "number" && t.type !== "any") throw fail(`${what(t)} has no order: compare texts or numbers`);
      }
      if (!compatible(a.type, b.type)) throw fail(`cannot compare ${what(a)} with ${what(b)}`);
      return { k: "cmp", op, a: a.o, b: b.o };
    }
    if (op === "~" || op === "!~") {
      if (a.type !== "text" && a.type !== "any") throw fail(`${what(a)} is not text: ~ looks for a text in a text`);
      if (isColumn(b.o)) throw fail(`the text to look for, ${quoted(b.node.text)}, must be a literal or an @ value, not a field`);
      if (b.type !== "text" && b.type !== "any") throw fail(`${what(b)} is not text`);
      return { k: "cmp", op, a: a.o, b: b.o };
    }
    // ?= and ?!=: an element of the list on the left equals (differs from) the value on the right.
    if (a.type !== "json" && a.type !== "ids" && a.type !== "list" && a.type !== "any")
      throw fail(`${what(a)} is not a list: put a json field, a many_via field, @auth.roles or an @ value on the left`);
    if (b.type === "null") throw fail(`no element equals null: ${op} takes a text, a number or a boolean`);
    if (b.type === "json" || b.type === "ids" || b.type === "list") throw fail(`${what(b)} is not a single value`);
    if ((a.type === "ids" || a.type === "list") && b.type !== "text" && b.type !== "any") throw fail(`${what(a)} holds texts: cannot look for ${what(b)}`);
    return { k: "cmp", op, a: a.o, b: b.o };
  }

  private operand(node: OperandNode): Typed {
    switch (node.k) {
      case "lit": {
        const v = node.v;
        const type: ValueType = v === null ? "null" : typeof v === "string" ? "text" : typeof v === "number" ? "number" : "boolean";
        return { o: { k: "lit", v }, type, node };
      }
      case "field":
        return this.path(this.scopes.length - 1, node.path, node.pos, node, 0);
      case "record": {
        if (this.scopes.length < 2) throw new RuleError(`${quoted(node.text)} at ${node.pos}: @record is known only inside @exists`, node.pos);
        return this.path(this.scopes.length - 2, node.path, node.pos, node, "@record.".length);
      }
      case "at":
        return this.atName(node);
    }
  }

  /** A field or a path through `one` relations from the collection of scope `scope`. */
  private path(scope: number, path: string[], pos: number, node: OperandNode, offset: number): Typed {
    if (path.length - 1 > MAX_HOPS)
      throw new RuleError(`${quoted(node.text)} at ${pos} goes through more than ${MAX_HOPS} relations`, pos);
    let col = this.scopes[scope]!;
    const hops: Hop[] = [];
    let segPos = pos + offset;
    for (let i = 0; i < path.length; i++) {
      const seg = path[i]!;
      const last = i === path.length - 1;
      const where = path.length > 1 ? ` in ${quoted(node.text)}` : "";
      const lower = seg.toLowerCase();
      const rel = this.catalog.relation(col.name, seg);
      if (!last) {
        if (!rel || rel.type !== "one") {
          const why = rel ? `is a ${rel.type} relation: a path goes only through one relations` : col.fieldMap.has(lower) || lower in SYSTEM ? `is not a relation of ${quoted(col.name)}` : `is not a field of ${quoted(col.name)}`;
          throw new RuleError(`${quoted(seg)}${where} at ${segPos} ${why}`, segPos);
        }
        const target = this.catalog.collection(rel.to_col);
        if (!target) throw new RuleError(`${quoted(seg)}${where} at ${segPos} points to a collection that no longer exists (${quoted(rel.to_col)})`, segPos);
        this.name(col.name, rel.from_field);
        hops.push({ field: col.fieldMap.get(lower)?.name ?? rel.from_field, to: target.name, read: this.readOf(target) });
        col = target;
        segPos += seg.length + 1;
        continue;
      }
      const system = SYSTEM[lower];
      if (system) return { o: { k: "field", scope, hops, name: lower, type: system }, type: system === "integer" ? "number" : system, node };
      const def = col.fieldMap.get(lower);
      if (def) {
        this.name(col.name, def.name);
        return { o: { k: "field", scope, hops, name: def.name, type: storedType(def.type) }, type: storedType(def.type), node };
      }
      if (rel?.type === "many_via") {
        this.name(col.name, rel.from_field);
        return { o: { k: "links", scope, hops, field: rel.from_field, junction: junctionTable(rel) }, type: "ids", node };
      }
      if (rel) throw new RuleError(`${quoted(seg)}${where} at ${segPos} is a many relation: a rule cannot look at it (use @exists)`, segPos);
      throw new RuleError(`unknown field ${quoted(seg)}${where} at ${segPos}${col === this.scopes[scope] && !hops.length ? "" : ` (collection ${quoted(col.name)})`}`, segPos);
    }
    throw new Error("unreachable");
  }

  private atName(node: Extract<OperandNode, { k: "at" }>): Typed {
    const [head, ...rest] = node.name;
    const fail = (why: string) => new RuleError(`${quoted(node.text)} at ${node.pos}: ${why}`, node.pos);
    const unknown = () => new RuleError(`unknown name ${quoted(node.text)} at ${node.pos}`, node.pos);
    const body = head === "request" && rest[0] === "body";
    if (node.isset && !body) throw fail("only @request.body.<field> takes :isset");
    if (head === "now" && !rest.length) return { o: { k: "now" }, type: "number", node };
    if (head === "auth") {
      this.readsAuth = true;
      const key = rest[0];
      if (rest.length === 1 && (key === "id" || key === "email")) return { o: { k: "auth", key }, type: "text", node };
      if (rest.length === 1 && key === "verified") return { o: { k: "auth", key }, type: "boolean", node };
      if (rest.length === 1 && key === "roles") return { o: { k: "auth", key }, type: "list", node };
      if (key === "metadata") {
        const keys = rest.slice(1);
        if (!keys.length) throw fail("name a key: @auth.metadata.<key>");
        if (keys.length > MAX_META_KEYS) throw fail(`at most ${MAX_META_KEYS} keys deep`);
        if (!keys.every((k) => META_KEY_RE.test(k))) throw fail("a metadata key is letters, digits and _");
        return { o: { k: "meta", keys }, type: "any", node };
      }
      throw unknown();
    }
    if (body) {
      if (this.op !== "create" && this.op !== "update") throw fail(`@request.body is known only in create and update rules, not in a ${this.op} rule`);
      const field = rest[1];
      if (rest.length !== 2 || !BODY_FIELD_RE.test(field!)) throw fail("name one field: @request.body.<field>");
      this.name(this.scopes[0]!.name, field!);
      this.bodyFields.add(field!.toLowerCase());
      return node.isset ? { o: { k: "isset", field: field! }, type: "boolean", node } : { o: { k: "body", field: field! }, type: "any", node };
    }
    throw unknown();
  }
}

function isColumn(o: Operand): boolean {
  return o.k === "field" || o.k === "links";
}

function compatible(a: ValueType, b: ValueType): boolean {
  return a === b || a === "any" || b === "any";
}

function describe(t: ValueType): string {
  switch (t) {
    case "ids":
      return "many_via field";
    case "list":
      return "list of roles";
    case "any":
      return "request value";
    default:
      return t;
  }
}
