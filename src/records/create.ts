import type { Database, Statement } from "bun:sqlite";
import type { Principal } from "../auth/principal.ts";
import type { AppContext } from "../context.ts";
import { requireCollection } from "../collections/catalog.ts";
import { q } from "../collections/ddl.ts";
import type { Collection } from "../collections/types.ts";
import { validateFieldRules } from "../collections/validate.ts";
import { inTransaction } from "../db/tx.ts";
import { ValidationError } from "../errors.ts";
import { hookAuth, runHooks } from "../hooks/run.ts";
import { prepareRelations, writeLinks } from "../relations/check.ts";
import { attachRelationFields } from "../relations/expand.ts";
import { checkAccess } from "../rules/access.ts";
import { newRecordId } from "./ids.ts";
import { asObject, encodeValue, ensureFields, userFields, type RecordJson } from "./codec.ts";

/** `POST /:collection`: checks the create rule, then inserts one record in its own transaction. */
export function createRecord(ctx: AppContext, name: string, body: unknown, p: Principal): RecordJson {
  const col = requireCollection(ctx, name);
  checkAccess(col, "create", p);
  const data = asObject(body);
  return inTransaction(ctx, () => insertRecord(ctx, col, data, p));
}

/**
 * Inserts one record inside the caller's transaction: hooks, names and types, field rules,
 * new columns, then the row. Used by create, bulk and batch alike.
 */
export function insertRecord(ctx: AppContext, col: Collection, body: Record<string, unknown>, p: Principal): RecordJson {
  const data = userFields(body);
  runHooks(ctx, col, "beforeCreate", {
    collection: col.name,
    op: "create",
    data,
    record: null,
    previous: null,
    auth: hookAuth(p),
  });
  const clean = ctx.hooks.list.length ? userFields(data) : data;
  const relations = prepareRelations(ctx, col, clean, p);
  col = ensureFields(ctx, col, relations.stored);
  const errors = [...validateFieldRules(col, clean, "create"), ...relations.errors];
  if (errors.length) throw new ValidationError(errors);
  const now = ctx.clock.now();
  const id = newRecordId(now);
  const names: string[] = [];
  const values: (string | number | null)[] = [id, now, now, p.kind === "user" ? p.userId : null, null];
  for (const k in clean) {
    const def = col.fieldMap.get(k.toLowerCase());
    if (!def) continue; // a null for a field never seen: nothing to store
    names.push(def.name);
    values.push(encodeValue(def.type, clean[k]));
  }
  insertStatement(ctx, col.name, names).run(...values);
  writeLinks(ctx, relations, id);
  const record = attachRelationFields(ctx, col, [insertedRecord(col, values, clean)], p)[0];
  runHooks(ctx, col, "afterCreate", {
    collection: col.name,
    op: "create",
    data: clean,
    record,
    previous: null,
    auth: hookAuth(p),
  });
  return record;
}

/**
 * The record just inserted, built from what was written instead of read back (a SELECT per
 * record would double the cost of bulk inserts): system fields, then every known field, null
 * where the body did not set it. Stored values decode to exactly the JSON values sent.
 */
function insertedRecord(col: Collection, system: (string | number | null)[], clean: Record<string, unknown>): RecordJson {
  const record: RecordJson = {
    _id: system[0],
    _created_at: system[1],
    _updated_at: system[2],
    _owner_id: system[3],
    _deleted_at: null,
  };
  for (const f of col.fields) record[f.name] = null;
  for (const k in clean) {
    const def = col.fieldMap.get(k.toLowerCase());
    if (def && clean[k] !== undefined) record[def.name] = clean[k];
  }
  return record;
}

const insertStatements = new WeakMap<Database, Map<string, Statement>>();

/** The prepared INSERT for a table and field list, built once per shape and connection (bulk inserts repeat it). */
function insertStatement(ctx: AppContext, table: string, fields: string[]): Statement {
  let byShape = insertStatements.get(ctx.sqlite);
  if (!byShape) insertStatements.set(ctx.sqlite, (byShape = new Map()));
  const key = fields.length ? `${table}\u0000${fields.join("\u0000")}` : table;
  let stmt = byShape.get(key);
  if (stmt === undefined) {
    const cols = ['"_id"', '"_created_at"', '"_updated_at"', '"_owner_id"', '"_deleted_at"', ...fields.map(q)];
    stmt = ctx.sqlite.query(`INSERT INTO ${q(table)} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`);
    if (byShape.size > 2000) byShape.clear();
    byShape.set(key, stmt);
  }
  return stmt;
}
