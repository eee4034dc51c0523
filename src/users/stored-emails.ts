import type { AppContext } from "../context.ts";
import { emailKey } from "./passwords.ts";
import { getMeta, setMetaIfAbsent } from "../db/meta.ts";
import { emailTaken, moveUserEmail, userEmailPage } from "../tables/users.ts";

/** `_meta` key set once every stored email is in the form lookups use (emailKey: NFC). */
const DONE = "emails_nfc";

/**
 * Brings emails stored before addresses were NFC-normalised (they were trimmed and lower-cased only)
 * into the form every lookup now uses, once per database: a decomposed `jose\u0301@x.com` would
 * otherwise never match its owner's (NFC) login again. An email whose NFC form another account already
 * holds (the same address registered twice, in two forms) is left as it is and logged: merging two
 * accounts is an admin's call. Stored emails with invisible characters stay too (an admin may change them).
 */
export async function normalizeStoredEmails(ctx: AppContext): Promise<void> {
  if (await getMeta(ctx.db, DONE)) return;
  let after = "";
  for (;;) {
    const rows = await userEmailPage(ctx.db, after);
    if (rows.length === 0) break;
    for (const row of rows) {
      const key = emailKey(row.email);
      if (key === row.email) continue;
      const moved = await ctx.db.transaction(async () => {
        if (await emailTaken(ctx.db, key)) return false;
        await moveUserEmail(ctx.db, row.id, row.email, key, ctx.clock.now());
        return true;
      });
      if (!moved) ctx.log.warn("a user's email was left as stored: another account holds its NFC form", { user_id: row.id });
    }
    after = rows[rows.length - 1]!.id;
  }
  await setMetaIfAbsent(ctx.db, DONE, "1");
}
