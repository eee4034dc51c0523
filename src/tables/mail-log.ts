import type { Engine } from "../db/engine.ts";

// The `_mail_log` table (mails sent per address, for the mail limit): the SQL that reads or writes it is written here.

/** Forgets the mails sent at or before `since`. */
export async function pruneMailLog(db: Engine, since: number): Promise<void> {
  await db.run("DELETE FROM _mail_log WHERE sent_at <= ?", [since]);
}

/** When mails were sent to `email` after `since`, oldest first. */
export async function mailTimes(db: Engine, email: string, since: number): Promise<{ sent_at: number }[]> {
  return await db.all<{ sent_at: number }>("SELECT sent_at FROM _mail_log WHERE email = ? AND sent_at > ? ORDER BY sent_at", [email, since]);
}

/** Notes a mail sent to `email` at `now`. */
export async function noteMailSent(db: Engine, email: string, now: number): Promise<void> {
  await db.run("INSERT INTO _mail_log (email, sent_at) VALUES (?, ?)", [email, now]);
}
