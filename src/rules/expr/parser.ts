import { RuleError, quoted, type CompareOperator, type Node, type OperandNode } from "./ast.ts";
import { tokenize, type Token } from "./lexer.ts";

// Tokens → a tree (ast.ts), by recursive descent whose depth the limits below bound: the text is refused over
// MAX_RULE_LENGTH characters before it is read, and nesting (parentheses, `!`, `@exists`) past MAX_DEPTH, so no
// rule can make the parser, the checker or the compiler recurse deeply.
//
//   or      := and ('||' and)*
//   and     := unary ('&&' unary)*
//   unary   := '!' unary | primary
//   primary := '(' or ')' | '@exists' '(' name ',' or ')' | operand (op operand)?
//   operand := 'text' | "text" | number | true | false | null | name('.'name)* | '@'name('.'name)*(':isset')?

/** Longest rule text, in UTF-16 code units (JavaScript's string length). */
export const MAX_RULE_LENGTH = 2000;
/** Deepest nesting of parentheses, `!` and `@exists` together. */
export const MAX_DEPTH = 32;
/** Most comparisons (and lone operands) in one rule. */
export const MAX_TERMS = 100;
/** Most `@exists` in one rule, and their deepest nesting. */
export const MAX_EXISTS = 3;
export const MAX_EXISTS_DEPTH = 2;

const COMPARE_OPS: ReadonlySet<string> = new Set(["=", "!=", ">", ">=", "<", "<=", "~", "!~", "?=", "?!="]);

/** Parses a rule's text; a RuleError names the first token that does not fit, and its position. */
export function parseExpression(src: string): Node {
  if (src.length > MAX_RULE_LENGTH) throw new RuleError(`longer than ${MAX_RULE_LENGTH} characters (${src.length})`, MAX_RULE_LENGTH + 1);
  const tokens = tokenize(src);
  if (tokens.length === 1) throw new RuleError("empty expression", 1);
  return new Parser(tokens).rule();
}

/** How a token reads in a message. */
function show(tok: Token): string {
  switch (tok.t) {
    case "end":
      return "end of expression";
    case "op":
      return quoted(tok.v);
    default:
      return quoted(tok.raw);
  }
}

function unexpected(tok: Token, hint = ""): RuleError {
  return new RuleError(`unexpected ${show(tok)} at ${tok.pos}${hint ? `: ${hint}` : ""}`, tok.pos);
}

class Parser {
  private i = 0;
  private terms = 0;
  private exists = 0;

  constructor(private readonly tokens: Token[]) {}

  rule(): Node {
    const node = this.or(0, 0);
    const tok = this.peek();
    if (tok.t !== "end") throw unexpected(tok, tok.t === "op" && tok.v === ")" ? "no '(' opens it" : "expected || or && between terms");
    return node;
  }

  private peek(): Token {
    return this.tokens[this.i]!;
  }

  private next(): Token {
    return this.tokens[this.i++]!;
  }

  private isOp(v: string): boolean {
    const tok = this.peek();
    return tok.t === "op" && tok.v === v;
  }

  private expectOp(v: string, hint: string): Token {
    const tok = this.next();
    if (tok.t !== "op" || tok.v !== v) throw unexpected(tok, hint);
    return tok;
  }

  private or(depth: number, existsDepth: number): Node {
    const pos = this.peek().pos;
    const of = [this.and(depth, existsDepth)];
    while (this.isOp("||")) {
      this.next();
      of.push(this.and(depth, existsDepth));
    }
    return of.length === 1 ? of[0]! : { k: "or", of, pos };
  }

  private and(depth: number, existsDepth: number): Node {
    const pos = this.peek().pos;
    const of = [this.unary(depth, existsDepth)];
    while (this.isOp("&&")) {
      this.next();
      of.push(this.unary(depth, existsDepth));
    }
    return of.length === 1 ? of[0]! : { k: "and", of, pos };
  }

  private deeper(depth: number, tok: Token): number {
    if (depth + 1 > MAX_DEPTH) throw new RuleError(`nested deeper than ${MAX_DEPTH} at ${tok.pos} (${show(tok)})`, tok.pos);
    return depth + 1;
  }

  private unary(depth: number, existsDepth: number): Node {
    const tok = this.peek();
    if (tok.t === "op" && tok.v === "!") {
      this.next();
      return { k: "not", x: this.unary(this.deeper(depth, tok), existsDepth), pos: tok.pos };
    }
    return this.primary(depth, existsDepth);
  }

  private primary(depth: number, existsDepth: number): Node {
    const tok = this.peek();
    if (tok.t === "op" && tok.v === "(") {
      this.next();
      const inner = this.or(this.deeper(depth, tok), existsDepth);
      this.expectOp(")", "expected ')'");
      return inner;
    }
    if (tok.t === "at" && tok.v.length === 1 && tok.v[0] === "exists" && !tok.isset) return this.existsTerm(depth, existsDepth);
    const a = this.operand();
    this.count(a.pos);
    const opTok = this.peek();
    if (opTok.t === "op" && COMPARE_OPS.has(opTok.v)) {
      this.next();
      const b = this.operand();
      return { k: "cmp", op: opTok.v as CompareOperator, a, b, pos: opTok.pos };
    }
    return { k: "bare", a, pos: a.pos };
  }

  private count(pos: number): void {
    if (++this.terms > MAX_TERMS) throw new RuleError(`more than ${MAX_TERMS} comparisons (at ${pos})`, pos);
  }

  private existsTerm(depth: number, existsDepth: number): Node {
    const at = this.next();
    if (++this.exists > MAX_EXISTS) throw new RuleError(`more than ${MAX_EXISTS} @exists at ${at.pos}`, at.pos);
    if (existsDepth + 1 > MAX_EXISTS_DEPTH) throw new RuleError(`@exists nested more than ${MAX_EXISTS_DEPTH} deep at ${at.pos}`, at.pos);
    const inner = this.deeper(depth, at);
    this.expectOp("(", "expected '(' after @exists");
    const name = this.next();
    if (name.t !== "name" || name.v.length !== 1) throw unexpected(name, "expected a collection name");
    this.expectOp(",", "expected ',' after the collection name");
    const where = this.or(inner, existsDepth + 1);
    this.expectOp(")", "expected ')' to close @exists");
    return { k: "exists", collection: name.v[0]!, collectionPos: name.pos, where, pos: at.pos };
  }

  private operand(): OperandNode {
    const tok = this.next();
    switch (tok.t) {
      case "text":
        return { k: "lit", v: tok.v, text: tok.raw, pos: tok.pos };
      case "num":
        return { k: "lit", v: tok.v, text: tok.raw, pos: tok.pos };
      case "name": {
        if (tok.v.length === 1) {
          const word = tok.v[0];
          if (word === "true" || word === "false") return { k: "lit", v: word === "true", text: tok.raw, pos: tok.pos };
          if (word === "null") return { k: "lit", v: null, text: tok.raw, pos: tok.pos };
        }
        return { k: "field", path: tok.v, text: tok.raw, pos: tok.pos };
      }
      case "at":
        if (tok.v[0] === "record" && !tok.isset) {
          if (tok.v.length < 2) throw new RuleError(`${quoted(tok.raw)} at ${tok.pos} needs a field: @record.<field>`, tok.pos);
          return { k: "record", path: tok.v.slice(1), text: tok.raw, pos: tok.pos };
        }
        if (tok.v.length === 1 && tok.v[0] === "exists") throw unexpected(tok, "@exists(...) is a condition, not a value");
        return { k: "at", name: tok.v, isset: tok.isset, text: tok.raw, pos: tok.pos };
      default:
        throw unexpected(tok, "expected a value: a field, a literal or an @ name");
    }
  }
}
