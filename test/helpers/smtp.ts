import { SMTPServer } from "smtp-server";
import { createTestApp } from "./app.ts";

/** One mail as received by the capture server, decoded. */
export interface CapturedMail {
  to: string[];
  from: string;
  subject: string;
  text: string;
  html: string;
  raw: string;
}

export interface SmtpCapture {
  url: string;
  mails: CapturedMail[];
  /** Mails sent to an address, oldest first. */
  to(address: string): CapturedMail[];
  /** The `token` query parameter of the link in the last mail to an address. */
  lastToken(address: string): string;
  clear(): void;
  close(): Promise<void>;
}

function decodeQuotedPrintable(s: string): string {
  const bytes: number[] = [];
  const soft = s.replace(/=\r?\n/g, "");
  for (let i = 0; i < soft.length; i++) {
    if (soft[i] === "=" && /^[0-9A-F]{2}$/i.test(soft.slice(i + 1, i + 3))) {
      bytes.push(parseInt(soft.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(soft.charCodeAt(i));
  }
  return Buffer.from(bytes).toString("utf8");
}

function parseHeaders(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of block.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

function decodeBody(headers: Record<string, string>, body: string): string {
  const enc = (headers["content-transfer-encoding"] ?? "").toLowerCase();
  if (enc === "quoted-printable") return decodeQuotedPrintable(body);
  if (enc === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  return body;
}

function decodeSubject(s: string): string {
  return s.replace(/=\?utf-8\?([BQ])\?([^?]*)\?=/gi, (_m, e: string, v: string) =>
    e.toUpperCase() === "B" ? Buffer.from(v, "base64").toString("utf8") : decodeQuotedPrintable(v.replace(/_/g, " ")),
  );
}

/** Splits a MIME message into its text and HTML parts (enough for what nodemailer produces). */
function parseMail(raw: string, to: string[], from: string): CapturedMail {
  const split = raw.search(/\r?\n\r?\n/);
  const headers = parseHeaders(raw.slice(0, split));
  const body = raw.slice(split).replace(/^\r?\n\r?\n/, "");
  const mail: CapturedMail = { to, from, subject: decodeSubject(headers.subject ?? ""), text: "", html: "", raw };
  const walk = (h: Record<string, string>, b: string) => {
    const type = (h["content-type"] ?? "text/plain").toLowerCase();
    const boundary = /boundary="?([^";]+)"?/i.exec(h["content-type"] ?? "")?.[1];
    if (type.startsWith("multipart/") && boundary) {
      for (const part of b.split(`--${boundary}`).slice(1)) {
        if (part.startsWith("--")) break;
        const p = part.replace(/^\r?\n/, "");
        const s = p.search(/\r?\n\r?\n/);
        walk(parseHeaders(p.slice(0, s)), p.slice(s).replace(/^\r?\n\r?\n/, ""));
      }
    } else if (type.startsWith("text/html")) mail.html += decodeBody(h, b);
    else if (type.startsWith("text/plain")) mail.text += decodeBody(h, b);
  };
  walk(headers, body);
  return mail;
}

/** A real SMTP server on 127.0.0.1 (port 0) capturing every mail it is given. */
export async function startSmtpCapture(): Promise<SmtpCapture> {
  const mails: CapturedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
        mails.push(parseMail(Buffer.concat(chunks).toString("utf8"), to, from));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  const to = (address: string) => mails.filter((m) => m.to.includes(address.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    to,
    lastToken(address) {
      const list = to(address);
      const m = list[list.length - 1];
      if (!m) throw new Error(`no mail to ${address}`);
      const token = /[?&]token=([A-Za-z0-9_%-]+)/.exec(m.text)?.[1];
      if (!token) throw new Error(`no token in the mail to ${address}`);
      return decodeURIComponent(token);
    },
    clear() {
      mails.length = 0;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A test app whose mail goes to a fresh capture server; `close` stops both. */
export async function createMailTestApp(env: Record<string, string> = {}) {
  const smtp = await startSmtpCapture();
  const t = createTestApp({ env: { SMTP_URL: smtp.url, ...env } });
  return {
    t,
    smtp,
    async close() {
      await t.close();
      await smtp.close();
    },
  };
}
