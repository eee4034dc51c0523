import { Elysia, t } from "elysia";
import { rotateAdminSecret } from "../../auth/admin.ts";
import type { AppContext } from "../../context.ts";
import { backupDownload } from "../../ops/backup.ts";
import { AppError } from "../../errors.ts";
import { mailStatus, sendTestMail } from "../../ops/mail.ts";
import { readJson } from "../body.ts";
import { bodyChecker } from "../check.ts";
import { doc } from "../doc.ts";
import { MailStatusBody, MailTestBody } from "../schemas.ts";
import { requireAdmin } from "../request.ts";

const mailTestBody = bodyChecker(MailTestBody);

/** `/api/v1/admin/backup`, `/rotate-secret`, `/mail`: operations the CLI has, for the console and remote admins. */
export function adminOpsRoutes(ctx: AppContext) {
  const max = ctx.config.maxBodyBytes;
  return new Elysia({ prefix: "/api/v1/admin" })
    .onBeforeHandle(async ({ request }) => {
      await requireAdmin(ctx, request);
    })
    .get("/backup", async () => {
      const { stream, bytes, filename } = await backupDownload(ctx);
      return new Response(stream, {
        headers: {
          "content-type": "application/vnd.sqlite3",
          "content-length": String(bytes),
          "content-disposition": `attachment; filename="${filename}"`,
          "cache-control": "no-store",
        },
      });
    }, doc({
      summary: "Download a consistent backup of the database",
      description: "The SQLite file. On PostgreSQL: 400 (back it up with pg_dump).",
      tag: "admin",
      access: "admin",
      media: "application/vnd.sqlite3",
      errors: [400],
    }))
    .post("/rotate-secret", async () => {
      // With ADMIN_SECRET set, the environment names the secret: a rotation here would be undone at the next start.
      if (ctx.config.adminSecret)
        throw new AppError(409, "conflict", "the admin secret comes from ADMIN_SECRET: change it there and restart the server");
      return { secret: await rotateAdminSecret(ctx) };
    }, doc({ summary: "Make a new admin secret (shown once); older admin tokens stop working", tag: "admin", access: "admin", ok: t.Object({ secret: t.String() }), errors: [409] }))
    .get("/mail", () => mailStatus(ctx), doc({ summary: "How mail is sent", tag: "admin", access: "admin", ok: MailStatusBody }))
    .post(
      "/mail/test",
      async ({ request }) => sendTestMail(ctx, mailTestBody.parse(await readJson(request, max))),
      doc({
        summary: "Send a test mail",
        tag: "admin",
        access: "admin",
        body: MailTestBody,
        ok: t.Object({ ok: t.Literal(true), to: t.String(), transport: MailStatusBody.properties.transport }),
        description: "503 `unavailable` when the SMTP server does not take the mail.",
        errors: [422, 503],
      }),
    );
}
