/**
 * A small JSON Schema (2020-12 subset, as OpenAPI 3.1 uses it) checker for contract tests: type,
 * const, enum, properties, required, additionalProperties, items, min/maxItems, anyOf, oneOf, allOf,
 * and `$ref` into the document's components. Returns the problems found, empty when the value matches.
 */
export function checkSchema(doc: any, schema: any, value: unknown, at = "$"): string[] {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [`${at}: no value allowed`];
  if (schema.$ref) return checkSchema(doc, resolveRef(doc, schema.$ref), value, at);
  const problems: string[] = [];
  if (schema.anyOf && !schema.anyOf.some((s: any) => checkSchema(doc, s, value, at).length === 0))
    problems.push(`${at}: matches none of anyOf (${JSON.stringify(value)?.slice(0, 120)})`);
  if (schema.oneOf && schema.oneOf.filter((s: any) => checkSchema(doc, s, value, at).length === 0).length !== 1)
    problems.push(`${at}: does not match exactly one of oneOf`);
  for (const s of schema.allOf ?? []) problems.push(...checkSchema(doc, s, value, at));
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) problems.push(`${at}: expected ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) problems.push(`${at}: not in enum`);
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => isType(t, value))) return [...problems, `${at}: expected ${types.join("|")}, got ${JSON.stringify(value)?.slice(0, 120)}`];
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) problems.push(`${at}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) problems.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => problems.push(...checkSchema(doc, schema.items, v, `${at}[${i}]`)));
  } else if (value && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    for (const k of schema.required ?? []) if (!(k in obj)) problems.push(`${at}: missing "${k}"`);
    const props = schema.properties ?? {};
    for (const [k, v] of Object.entries(obj)) {
      if (k in props) problems.push(...checkSchema(doc, props[k], v, `${at}.${k}`));
      else if (schema.additionalProperties !== undefined) problems.push(...checkSchema(doc, schema.additionalProperties, v, `${at}.${k}`));
    }
  }
  return problems;
}

function isType(type: string, v: unknown): boolean {
  switch (type) {
    case "null":
      return v === null;
    case "array":
      return Array.isArray(v);
    case "object":
      return !!v && typeof v === "object" && !Array.isArray(v);
    case "integer":
      return Number.isInteger(v);
    case "number":
      return typeof v === "number";
    default:
      return typeof v === type;
  }
}

/** Follows a local `#/…` reference; throws for one that does not resolve. */
export function resolveRef(doc: any, ref: string): any {
  if (!ref.startsWith("#/")) throw new Error(`unsupported $ref ${ref}`);
  let node = doc;
  for (const part of ref.slice(2).split("/")) {
    node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (node === undefined) throw new Error(`unresolved $ref ${ref}`);
  }
  return node;
}
