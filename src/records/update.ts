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
import { checkAccess, recordNotFound } from "../rules/access.ts";
import { checkRecordAccess } from "./access.ts";
import { asObject, encodeValue, ensureFields, fetchRecord, userFields, type RecordJson } from "./codec.ts";

/** `PATCH /:collection/:id`: only the given fields change; `null` clears a field. */
export function updateRecord(ctx: AppContext, name: string, id: string, body: unknown, p: Principal): RecordJson {
  const col = requireCollection(ctx, name);
  const access = checkAccess(col, "update", p);
  const data = asObject(body);
  return inTransaction(ctx, () => {
    const previous = fetchRecord(ctx, col, id);
    if (!previous || previous._deleted_at !== null) throw recordNotFound();
    checkRecordAccess(col, "update", p, access, previous);
    return patchRecord(ctx, col, previous, data, p);
  });
}

/** Applies a patch to a fetched active record inside the caller's transaction (update and batch). */
export function patchRecord(
  ctx: AppContext,
  col: Collection,
  previous: RecordJson,
  body: Record<string, unknown>,
  p: Principal,
): RecordJson {
  const data = userFields(body);
  runHooks(ctx, col, "beforeUpdate", {
    collection: col.name,
    op: "update",
    data,
    record: previous,
    previous,
    auth: hookAuth(p),
  });
  const clean = userFields(data);
  const relations = prepareRelations(ctx, col, clean, p);
  col = ensureFields(ctx, col, relations.stored);
  const errors = [...validateFieldRules(col, clean, "update"), ...relations.errors];
  if (errors.length) throw new ValidationError(errors);
  const sets = ['"_updated_at" = ?'];
  const values: (string | number | null)[] = [Math.max(ctx.clock.now(), previous._updated_at as number)];
  for (const [k, v] of Object.entries(clean)) {
    const def = col.fieldMap.get(k.toLowerCase());
    if (!def) continue;
    sets.push(`${q(def.name)} = ?`);
    values.push(encodeValue(def.type, v));
  }
  values.push(previous._id as string);
  ctx.sqlite.query(`UPDATE ${q(col.name)} SET ${sets.join(", ")} WHERE "_id" = ?`).run(...values);
  writeLinks(ctx, relations, previous._id as string);
  const record = attachRelationFields(ctx, col, [fetchRecord(ctx, col, previous._id as string)!], p)[0];
  runHooks(ctx, col, "afterUpdate", {
    collection: col.name,
    op: "update",
    data: clean,
    record,
    previous,
    auth: hookAuth(p),
  });
  return record;
}
