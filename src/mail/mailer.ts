import type { Transporter } from "nodemailer";
import type { Logger } from "../log.ts";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** The link the mail carries, logged when there is no SMTP server (never the token alone). */
  link?: string;
}

export interface Mailer {
  /** Queues a mail; never throws and never blocks the caller. Failures are logged. */
  send(msg: MailMessage): void;
  /** Sends one mail now and rejects when the SMTP server refuses it (an admin's delivery check); logs it without SMTP. */
  sendNow(msg: MailMessage): Promise<void>;
  /** Resolves when every queued mail has been handed over (tests and shutdown). */
  flush(): Promise<void>;
  close(): void;
}

/**
 * A mailer sending through SMTP_URL with nodemailer, or writing each mail to the log without it.
 * nodemailer (and the node:http, node:tls and node:zlib it loads) is loaded with the first mail, not at start.
 */
export function createMailer(opts: { smtpUrl: string | null; from: string; fromName: () => Promise<string>; log: Logger }): Mailer {
  const pending = new Set<Promise<unknown>>();
  const { smtpUrl } = opts;
  let transport: Promise<Transporter> | null = null;
  let closed = false;
  const open = () =>
    (transport ??= import("nodemailer").then(({ default: nodemailer }) => {
      const t = nodemailer.createTransport(smtpUrl!);
      if (closed) t.close();
      return t;
    }));
  return {
    send(msg) {
      if (!smtpUrl) {
        opts.log.info("mail (no SMTP_URL set, not sent)", { to: msg.to, subject: msg.subject, link: msg.link });
        return;
      }
      const p = Promise.all([open(), opts.fromName()])
        .then(([t, name]) => t.sendMail({ from: { name, address: opts.from }, to: msg.to, subject: msg.subject, text: msg.text, html: msg.html }))
        .catch((err: Error) => opts.log.error("mail delivery failed", { to: msg.to, subject: msg.subject, error: err.message }))
        .finally(() => pending.delete(p));
      pending.add(p);
    },
    async sendNow(msg) {
      if (!smtpUrl) {
        opts.log.info("mail (no SMTP_URL set, not sent)", { to: msg.to, subject: msg.subject });
        return;
      }
      const [t, name] = await Promise.all([open(), opts.fromName()]);
      await t.sendMail({ from: { name, address: opts.from }, to: msg.to, subject: msg.subject, text: msg.text, html: msg.html });
    },
    async flush() {
      while (pending.size) await Promise.allSettled([...pending]);
    },
    close() {
      closed = true;
      void transport?.then((t) => t.close(), () => {});
    },
  };
}
