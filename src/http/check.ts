import { Kind, Type, type Static, type TObject, type TSchema, type TUnsafe } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";
import { AppError, badRequest, type Checked } from "../errors.ts";

/**
 * Request bodies checked against the TypeBox schemas of `schemas.ts`, compiled once, at first use.
 * Elysia's own validation is not used: it runs before a route's credential checks, so a bad body
 * would answer 400 where CONTRACT wants 401, 403 or 404. A route runs its checker instead, and the
 * service raises a rejection (`bodyOf`) at the point where it used to check the body by hand, after
 * the credentials, the setting and the collection it checks first.
 */

const BY_SERVICE = Symbol("checked by the service");

/**
 * Marks a field whose value the service judges (an email is 422, a token or password 401): the
 * schema documents its type, the route lets any value through and leaves the answer to the service.
 */
export function byService(schema: TSchema): TUnsafe<unknown> {
  return { ...schema, [BY_SERVICE]: true } as unknown as TUnsafe<unknown>;
}

/** What went wrong, for a message: the top-level key (`""` for the body itself), the path below it, and TypeBox's error. */
export interface BodyIssue {
  key: string;
  path: string[];
  error: ValueError;
}

/**
 * A message per top-level key (`""`: the body itself; `"*"`: a key the schema does not allow; `"#"`:
 * an element of a body that is an array), else the default.
 */
export type BodyMessages = Record<string, string | ((issue: BodyIssue) => string | AppError)>;

/** A compiled checker: `defer` returns the value or the rejection (for the service to raise), `parse` throws it. */
export interface BodyChecker<T, In = unknown> {
  defer(value: In): Checked<T>;
  parse(value: In): T;
}

/**
 * The schema the route enforces: a field marked `byService` may hold anything (or be missing), in an
 * object or as an array's items.
 */
function enforced(schema: TSchema): TSchema {
  if (schema[Kind] === "Array") {
    const items = BY_SERVICE in schema.items ? Type.Unknown() : enforced(schema.items);
    return items === schema.items ? schema : { ...schema, items };
  }
  if (schema[Kind] !== "Object") return schema;
  const obj = schema as TObject;
  const properties: Record<string, TSchema> = {};
  let changed = false;
  for (const [k, p] of Object.entries(obj.properties)) {
    const e = BY_SERVICE in p ? Type.Optional(Type.Unknown()) : enforced(p);
    changed ||= e !== p;
    properties[k] = e;
  }
  if (!changed) return schema;
  const required = (obj.required ?? []).filter((k) => !(BY_SERVICE in obj.properties[k]!));
  return { ...obj, properties, required } as TSchema;
}

const KIND_TEXT: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.Object]: "a JSON object",
  [ValueErrorType.Array]: "an array",
  [ValueErrorType.String]: "a string",
  [ValueErrorType.Boolean]: "a boolean",
  [ValueErrorType.Integer]: "an integer",
  [ValueErrorType.Number]: "a number",
};

/** The default message: `the request body must be a JSON object`, `name is required`, `unique must be a boolean`… */
function defaultMessage({ key, error }: BodyIssue): string {
  if (key === "") return "the request body must be a JSON object";
  const { minimum, maximum } = error.schema;
  if (error.schema[Kind] === "Integer" && minimum !== undefined && maximum !== undefined) return `${key} must be an integer between ${minimum} and ${maximum}`;
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return `unknown key "${key}"`;
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${key} is required`;
  const kind = KIND_TEXT[error.type];
  if (kind) return `${key} must be ${kind}`;
  const literals = literalsOf(error.schema);
  if (literals) return `${key} must be ${literals.length === 1 ? JSON.stringify(literals[0]) : `one of: ${literals.join(", ")}`}`;
  return `${key} is not valid`;
}

function literalsOf(schema: TSchema): unknown[] | null {
  if (schema[Kind] === "Literal") return [schema.const];
  if (schema[Kind] === "Union" && (schema.anyOf as TSchema[]).every((s) => s[Kind] === "Literal")) return (schema.anyOf as TSchema[]).map((s) => s.const);
  return null;
}

const unescape = (segment: string) => segment.replace(/~1/g, "/").replace(/~0/g, "~");

/** TypeBox yields an object's missing keys, then the keys it does not allow, then the fields' errors. */
const ERRORS_SCANNED = 100;

/**
 * The error to report: the body's own type first, then a key not allowed, then TypeBox's order (the
 * schema's field order). IMPORTANT: errors are produced lazily and only the first few are looked at,
 * so a body of a million wrong elements costs no more than one.
 */
function firstError(errors: Iterable<ValueError>): ValueError {
  let best: ValueError | undefined;
  let bestRank = 3;
  let seen = 0;
  for (const e of errors) {
    const rank = e.path === "" ? 0 : e.type === ValueErrorType.ObjectAdditionalProperties ? 1 : 2;
    if (rank < bestRank) (best = e), (bestRank = rank);
    if (rank <= 1 || ++seen >= ERRORS_SCANNED) break;
  }
  return best!;
}

/**
 * Compiles `schema` at its first use (checkers are declared at module load, and compiling them all
 * there would cost the server's start). Messages are derived from the first error (its top-level key
 * and expected kind) unless `messages` names one for that key, so the texts clients and tests know stay the same.
 */
export function bodyChecker<T extends TSchema>(schema: T | (() => T), messages: BodyMessages = {}): BodyChecker<Static<T>> {
  let compiled: TypeCheck<TSchema> | undefined;
  const compile = () => (compiled = TypeCompiler.Compile(enforced(typeof schema === "function" ? schema() : schema)));
  const reject = (value: unknown): AppError => {
    const error = firstError((compiled ?? compile()).Errors(value));
    const path = error.path.split("/").slice(1).map(unescape);
    const issue: BodyIssue = { key: path[0] ?? "", path: path.slice(1), error };
    // Own keys only: a body key such as "constructor" must not find Object.prototype's.
    const custom =
      error.type === ValueErrorType.ObjectAdditionalProperties && issue.path.length === 0
        ? messages["*"]
        : ((Object.hasOwn(messages, issue.key) ? messages[issue.key] : undefined) ?? (Array.isArray(value) && issue.key ? messages["#"] : undefined));
    const out = typeof custom === "function" ? custom(issue) : (custom ?? defaultMessage(issue));
    return out instanceof AppError ? out : badRequest(out);
  };
  return {
    // A rejection found while reading the body (readJson's key limit) is passed on as it is.
    defer: (value) => (value instanceof AppError ? value : (compiled ?? compile()).Check(value) ? (value as Static<T>) : reject(value)),
    parse: (value) => {
      if ((compiled ?? compile()).Check(value)) return value as Static<T>;
      throw reject(value);
    },
  };
}

/** Query parameters as given: a request's, or the same names as strings (the CLI's options). */
export type QueryInput = URLSearchParams | Record<string, string | undefined>;

/** Which parameters a query checker reads, and which of a repeated parameter's values counts. */
export interface QueryOptions {
  /** Only these parameters (the others are read elsewhere, e.g. by the query language). */
  pick?: string[];
  /** The last of repeated values counts (the data API's rule); else the first. */
  last?: boolean;
}

const BOOLEAN_TEXT: Record<string, boolean> = { true: true, "1": true, false: false, "0": false };

/**
 * A query string checked against an object schema: each parameter it reads (an empty value counts as
 * absent) becomes a number where the schema wants an integer and it is all digits, a boolean where the
 * schema wants one and it is true, false, 1 or 0; the result is checked like a body, with messages such
 * as `limit must be an integer between 1 and 500` and `total must be true or false`.
 */
export function queryChecker<T extends TObject>(schema: T, messages: BodyMessages = {}, opts: QueryOptions = {}): BodyChecker<Static<T>, QueryInput> {
  const names = Object.entries(schema.properties)
    .filter(([name]) => !opts.pick || opts.pick.includes(name))
    .map(([name, s]) => ({ name, kind: s[Kind] as string }));
  const booleans = Object.fromEntries(names.filter((n) => n.kind === "Boolean").map((n) => [n.name, `${n.name} must be true or false`]));
  const picked = (): TSchema => (opts.pick ? Type.Pick(schema, opts.pick) : schema);
  const check = bodyChecker(picked, { ...booleans, ...messages }) as BodyChecker<Static<T>>;
  const read = (input: QueryInput): Record<string, unknown> => {
    const value: Record<string, unknown> = {};
    for (const { name, kind } of names) {
      let raw: string | null | undefined;
      if (input instanceof URLSearchParams) raw = opts.last ? input.getAll(name).at(-1) : input.get(name);
      else raw = input[name];
      if (raw === null || raw === undefined || raw === "") continue;
      // Own keys only: a value such as "constructor" must not find Object.prototype's member.
      value[name] = kind === "Integer" && /^\d+$/.test(raw) ? Number(raw) : kind === "Boolean" ? (Object.hasOwn(BOOLEAN_TEXT, raw) ? BOOLEAN_TEXT[raw] : raw) : raw;
    }
    return value;
  };
  return { defer: (input) => check.defer(read(input)), parse: (input) => check.parse(read(input)) };
}
