// The expression rules of CONTRACT §12 as the parser reads them: a tree of boolean terms over operands, each
// node with the 1-based position of the token it starts at, for messages that name it.

/** A comparison operator of the language. */
export type CompareOperator = "=" | "!=" | ">" | ">=" | "<" | "<=" | "~" | "!~" | "?=" | "?!=";

/** A literal's value: text, a finite number, a boolean or null. */
export type Literal = string | number | boolean | null;

/** An operand as written. `text` is its token as typed (for messages), `pos` where it starts. */
export type OperandNode =
  | { k: "lit"; v: Literal; text: string; pos: number }
  /** A field of the record in scope, or a path through `one` relations (`post.author.email`). */
  | { k: "field"; path: string[]; text: string; pos: number }
  /** `@record.<path>`: inside `@exists`, a field of the record one scope out. */
  | { k: "record"; path: string[]; text: string; pos: number }
  /** Any other `@` name: `@auth.id`, `@now`, `@request.body.title:isset`; checked later. */
  | { k: "at"; name: string[]; isset: boolean; text: string; pos: number };

/** A boolean term as written. */
export type Node =
  | { k: "or" | "and"; of: Node[]; pos: number }
  | { k: "not"; x: Node; pos: number }
  | { k: "cmp"; op: CompareOperator; a: OperandNode; b: OperandNode; pos: number }
  /** An operand standing alone as a term: a boolean (`published`, `@auth.verified`, `true`). */
  | { k: "bare"; a: OperandNode; pos: number }
  | { k: "exists"; collection: string; collectionPos: number; where: Node; pos: number };

/** A mistake in a rule: the message names the token, `position` is where it starts (1-based). */
export class RuleError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** A token as a message quotes it: in single quotes, cut at 40 characters. */
export function quoted(text: string): string {
  return `'${text.length > 40 ? `${text.slice(0, 40)}…` : text}'`;
}
