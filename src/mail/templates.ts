import type { MailMessage } from "./mailer.ts";

/** The mails the service sends, each with a link carrying a single-use token. */
export type MailKind = "verify_email" | "magic_link" | "reset_password";

const COPY: Record<MailKind, { subject: string; intro: string; action: string; validity: string; outro: string }> = {
  verify_email: {
    subject: "Verify your email address",
    intro: "Please confirm your email address.",
    action: "Verify email address",
    validity: "24 hours",
    outro:
      "If you did not create this account, ignore this mail and do not open the link: it confirms the account as it was registered, with the password chosen then.",
  },
  magic_link: {
    subject: "Your sign-in link",
    intro: "Use this link to sign in.",
    action: "Sign in",
    validity: "30 minutes",
    outro: "If you did not ask to sign in, you can ignore this mail.",
  },
  reset_password: {
    subject: "Reset your password",
    intro: "Someone asked to reset the password of your account.",
    action: "Choose a new password",
    validity: "1 hour",
    outro: "If you did not ask for this, you can ignore this mail; your password stays as it is.",
  },
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** A time as the mails write it: `2025-03-07 14:05 UTC`. */
export function mailTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/**
 * Renders one mail, plain text and HTML, in the name of the app (setting `app_name`). `registeredAt` (the
 * verification mail) says when the account was made: whoever did not make it then knows it was not them.
 */
export function renderMail(kind: MailKind, opts: { to: string; appName: string; link: string; registeredAt?: number }): MailMessage {
  const base = COPY[kind];
  const c =
    opts.registeredAt === undefined
      ? base
      : { ...base, intro: `An account was registered with this email address on ${mailTime(opts.registeredAt)}. If that was you, please confirm your address.` };
  const app = opts.appName || "baas";
  const text = `${app}\n\n${c.intro}\n\n${c.action} (the link is valid for ${c.validity} and works once):\n${opts.link}\n\n${c.outro}\n`;
  const a = escapeHtml(app);
  const l = escapeHtml(opts.link);
  const html = `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5">
<h2>${a}</h2>
<p>${escapeHtml(c.intro)}</p>
<p><a href="${l}" style="display:inline-block;padding:8px 16px;background:#2563eb;color:#fff;text-decoration:none;border-radius:4px">${escapeHtml(c.action)}</a></p>
<p>The link is valid for ${c.validity} and works once. If the button does not work, open this address:<br>${l}</p>
<p style="color:#666">${escapeHtml(c.outro)}</p>
</body></html>`;
  return { to: opts.to, subject: `${c.subject} - ${app}`, text, html, link: opts.link };
}
