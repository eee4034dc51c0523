import { Elysia } from "elysia";
import { addField, changeField, dropField } from "../../collections/fields.ts";
import { applySchema, exportSchema } from "../../collections/schema.ts";
import type { AppContext } from "../../context.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { requireAdmin } from "../request.ts";
import { CollectionBody, FieldDeclBody, FieldPatchBody, SchemaApplyBody, SchemaBody, SchemaPlanBody } from "../schemas.ts";

const tag = "admin";
const fieldPatch = bodyChecker(FieldPatchBody, { "*": ({ key }) => `unknown key "${key}": expected name or type` });
const schemaApply = bodyChecker(SchemaApplyBody, { schema: "schema is required", "*": ({ key }) => `unknown key "${key}": expected schema, dry_run or prune` });

/**
 * `/api/v1/admin/collections/:name/fields` and `/api/v1/admin/schema` (CONTRACT §13): declared fields and their
 * changes, and the schema as one document to export and apply (admin only).
 */
export function adminSchemaRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    // Every route below needs admin credentials, re-checked against the database each time.
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .post(
      "/collections/:name/fields",
      async ({ request, params, set }) => {
        const res = await addField(ctx, params.name, await readJson(request, max));
        set.status = 201;
        return res;
      },
      doc({ summary: "Declare a field (its column exists at once)", tag, access: "admin", body: FieldDeclBody, ok: CollectionBody, status: 201, errors: [400, 404, 409] }),
    )
    .patch(
      "/collections/:name/fields/:field",
      async ({ request, params }) => changeField(ctx, params.name, params.field, fieldPatch.parse(await readJson(request, max))),
      doc({
        summary: "Rename a field and/or change its type",
        description: "A new type converts every stored value (`\"12\"` → 12, 1 → `\"1\"`, `\"true\"`/`\"false\"` ↔ boolean, any → json), or nothing changes: 409 with `count`, the values that would not convert.",
        tag,
        access: "admin",
        body: FieldPatchBody,
        ok: CollectionBody,
        errors: [400, 404, 409],
      }),
    )
    .delete(
      "/collections/:name/fields/:field",
      ({ params }) => dropField(ctx, params.name, params.field),
      doc({ summary: "Drop a field, its column and its data", description: "409 while an index, a relation or an access rule names it.", tag, access: "admin", ok: CollectionBody, errors: [404, 409] }),
    )
    .get("/schema", () => exportSchema(ctx), doc({ summary: "The schema: every collection and relation", tag, access: "admin", ok: SchemaBody }))
    .post(
      "/schema/apply",
      async ({ request }) => applySchema(ctx, schemaApply.parse(await readJson(request, max))),
      doc({
        summary: "Make the database match a schema",
        description: "Creates what is missing, changes what differs (a field with `renamed_from` is renamed), drops what the schema lacks only with `prune`; all or nothing. `dry_run` makes and checks every change, then rolls it back.",
        tag,
        access: "admin",
        body: SchemaApplyBody,
        ok: SchemaPlanBody,
        errors: [400, 404, 409],
      }),
    );
}
