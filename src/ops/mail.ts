import type { AppContext } from "../context.ts";
import { AppError } from "../errors.ts";
import { normalizeEmail } from "../users/passwords.ts";
import { getSetting } from "../settings/settings.ts";

/** How mail leaves this server (`GET /admin/mail`). Set by SMTP_URL and MAIL_FROM; the URL's credentials are never shown. */
export interface MailStatus {
  transport: "smtp" | "log";
  /** `host:port` of the SMTP server, null without SMTP_URL. */
  smtp_server: string | null;
  from: string;
  sender_name: string;
}

/** The mail configuration as an admin may see it. */
export async function mailStatus(ctx: AppContext): Promise<MailStatus> {
  let server: string | null = null;
  if (ctx.config.smtpUrl) {
    try {
      const u = new URL(ctx.config.smtpUrl);
      server = `${u.hostname}:${u.port || (u.protocol === "smtps:" ? "465" : "587")}`;
    } catch {
      server = "(unreadable SMTP_URL)";
    }
  }
  return { transport: ctx.config.smtpUrl ? "smtp" : "log", smtp_server: server, from: ctx.config.mailFrom, sender_name: await getSetting(ctx, "app_name") };
}

/** `POST /admin/mail/test { to }`: sends a short mail to check delivery; without SMTP_URL it goes to the log. */
export async function sendTestMail(ctx: AppContext, input: { to: unknown }): Promise<{ ok: true; to: string; transport: "smtp" | "log" }> {
  const to = normalizeEmail(input.to, "to");
  const app = await getSetting(ctx, "app_name");
  try {
    await ctx.mailer.sendNow({ to, subject: `Test mail from ${app}`, text: `${app}\n\nThis is a test mail sent by an admin. Mail delivery works.\n` });
  } catch (err) {
    // The SMTP server's answer helps the admin fix the setup; it carries no secret of ours.
    throw new AppError(503, "unavailable", `the SMTP server did not take the mail: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { ok: true, to, transport: ctx.config.smtpUrl ? "smtp" : "log" };
}
