import type { AppContext } from "../context.ts";
import { listCollections, openCollection } from "../catalog/catalog.ts";
import { attachRelationFields } from "../relations/expand.ts";
import type { Collection } from "../catalog/types.ts";
import { AppError, badRequest, bodyOf, type Checked } from "../errors.ts";
import type { RecordJson } from "../query/rows.ts";
import { hardDeleteRecord } from "../records/delete.ts";
import { listRecords } from "../records/list.ts";
import { inTransaction } from "../transaction.ts";
import { findUserById, userToJson, type UserRow } from "../users/users.ts";
import { ADMIN, type Principal } from "../principal.ts";
import { clearLoginAttempts, releaseLoginAttempt, takeLoginAttempt } from "../auth/lockout.ts";
import { hashTurnOf, verifyPassword, type HashFor } from "../users/passwords.ts";
import { useCode } from "../auth/totp.ts";
import { sessionById } from "../tables/sessions.ts";
import type { ClientInfo } from "../auth/sessions.ts";
import { deleteUserRow } from "../tables/users.ts";

// A user's own data (CONTRACT §16): everything they own, as one download, and the erasure of the account.

/** Records per read of an export: what the server holds of an export at a time, whatever its size. */
export const EXPORT_PAGE = 500;
/** How old a session may be to delete an account that has neither password nor 2FA (OAuth or magic link only). */
export const FRESH_SESSION_MS = 5 * 60 * 1000;

async function currentUser(ctx: AppContext, p: Principal): Promise<{ user: UserRow; sessionId: string | null }> {
  if (p.kind !== "user") throw new AppError(401, "unauthorized", "a user access token is required");
  const user = await findUserById(ctx, p.userId);
  if (!user) throw new AppError(401, "unauthorized", "user no longer exists");
  return { user, sessionId: p.sessionId };
}

/**
 * A record as the export writes it: each file's name becomes its download path (CONTRACT §16: "files as download
 * paths"), `/api/v1/files/<collection>/<id>/<name>`, a list of them for a field of several files.
 */
function exportedRecord(col: Collection, record: RecordJson): RecordJson {
  const fileFields = col.fields.filter((f) => f.type === "file");
  if (!fileFields.length) return record;
  const out: RecordJson = { ...record };
  const path = (name: unknown) =>
    typeof name === "string" ? `/api/v1/files/${encodeURIComponent(col.name)}/${encodeURIComponent(String(record._id))}/${encodeURIComponent(name)}` : name;
  for (const f of fileFields) {
    const v = out[f.name];
    out[f.name] = Array.isArray(v) ? v.map(path) : path(v);
  }
  return out;
}

/**
 * One page of the caller's active records of a collection, after `after` (by `_id`); null when the collection is
 * gone. Read as an admin reads them (the user's own, whatever the read rules), but for `many` fields: those list
 * other records naming this one, and only those the user may read (as their own reads of it answer).
 */
async function ownedPage(ctx: AppContext, col: Collection, p: Principal & { kind: "user" }, after: string | null): Promise<RecordJson[] | null> {
  const params = new URLSearchParams({ filter: `_owner_id:eq:${p.userId}`, sort: "_id" });
  // A filter, not a cursor: a cursor naming a record deleted meanwhile would be refused (400).
  if (after) params.append("filter", `_id:gt:${after}`);
  try {
    const items = (await listRecords(ctx, col.name, params, ADMIN, { limit: EXPORT_PAGE, total: false })).items;
    const h = await openCollection(ctx, col.name);
    const many = new Set(h.from.filter((r) => r.type === "many").map((r) => r.from_field.toLowerCase()));
    if (many.size && items.length) await attachRelationFields(ctx, h, items, p, many);
    return items;
  } catch (err) {
    // Dropped while the export ran: it has nothing of the user any more.
    if (err instanceof AppError && err.status === 404) return null;
    throw err;
  }
}

/** The ids of every record of a collection the user owns, soft-deleted ones included, read through the query layer. */
async function ownedIds(ctx: AppContext, col: Collection, userId: string): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const params = new URLSearchParams({ filter: `_owner_id:eq:${userId}`, sort: "_id", fields: "_id" });
    if (ids.length) params.append("filter", `_id:gt:${ids[ids.length - 1]}`);
    const page = await listRecords(ctx, col.name, params, ADMIN, { limit: EXPORT_PAGE, total: false, include_deleted: true });
    for (const r of page.items) ids.push(r._id as string);
    if (page.items.length < EXPORT_PAGE) return ids;
  }
}

/**
 * `GET /auth/me/export`: `{ user, collections: { <name>: [records] } }`, every active record whose `_owner_id`
 * is the caller, by collection (only collections holding some), each as an admin reads it (relation fields
 * included; `many` fields as the user may read them). Streamed: the records are read EXPORT_PAGE at a time, in `_id` order, as the client takes them, so
 * a user with millions of records costs the server one page of memory. Each page is read on its own (not one
 * snapshot): a record written during the export may or may not be in it. A failure part-way ends the
 * stream early (the client gets invalid JSON, never a silently short export).
 */
export async function exportOwnData(ctx: AppContext, p: Principal): Promise<Response> {
  const { user } = await currentUser(ctx, p);
  const owner = p as Principal & { kind: "user" };
  const cols = await listCollections(ctx);
  const enc = new TextEncoder();
  let i = 0;
  let started = false; // the current collection's key is written
  let after: string | null = null;
  let firstCollection = true;
  const nextCollection = () => {
    i++;
    after = null;
    started = false;
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(enc.encode(`{"user":${JSON.stringify(userToJson(user))},"collections":{`));
    },
    async pull(controller) {
      try {
        // Each pull writes one piece (a page, a collection's end, or the document's end): the client's pace sets the reads.
        for (;;) {
          const col = cols[i];
          if (!col) {
            controller.enqueue(enc.encode("}}"));
            controller.close();
            return;
          }
          const page = await ownedPage(ctx, col, owner, after);
          if (page && page.length) {
            const items = page.map((r) => JSON.stringify(exportedRecord(col, r))).join(",");
            let text = started ? `,${items}` : `${firstCollection ? "" : ","}${JSON.stringify(col.name)}:[${items}`;
            firstCollection = false;
            started = true;
            after = page[page.length - 1]!._id as string;
            if (page.length < EXPORT_PAGE) {
              text += "]";
              nextCollection();
            }
            controller.enqueue(enc.encode(text));
            return;
          }
          // Nothing (more) of the user in this collection.
          const open = started;
          nextCollection();
          if (open) {
            controller.enqueue(enc.encode("]"));
            return;
          }
        }
      } catch (err) {
        ctx.log.error("export of own data failed", { user: user.id, error: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) });
        controller.error(err);
      }
    },
  });
  return new Response(stream, {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "content-disposition": 'attachment; filename="export.json"',
      "cache-control": "no-store",
    },
  });
}

/**
 * Proves the caller is the account's holder before it is deleted: its password, or a fresh 2FA code (TOTP, or a
 * recovery code) when 2FA is on. An account with neither (OAuth or magic link only) proves it by a session at
 * most FRESH_SESSION_MS old: signing in again is the proof. Each password or code counts toward the lockout
 * (CONTRACT §8c), as a login would.
 */
async function proveHolder(ctx: AppContext, user: UserRow, sessionId: string | null, b: Record<string, unknown>, by: HashFor): Promise<void> {
  for (const k of Object.keys(b)) if (k !== "password" && k !== "code") throw badRequest(`unknown key "${k.slice(0, 40)}": expected password or code`);
  const hasPassword = !!user.password_hash;
  const hasTotp = !!user.totp_enabled;
  if (b.password !== undefined && b.password !== null) {
    if (typeof b.password !== "string") throw badRequest("password must be a string");
    // IMPORTANT: the guess is counted before the slow hash (see login).
    await takeLoginAttempt(ctx, user.email);
    const ok = await verifyPassword(b.password, user.password_hash, by).catch(async (err) => {
      await releaseLoginAttempt(ctx, user.email); // no turn to hash in (429): nothing was tried
      throw err;
    });
    if (!ok) throw new AppError(401, "invalid_credentials", "wrong password");
  } else if (b.code !== undefined && b.code !== null) {
    if (!hasTotp) throw badRequest("two-factor authentication is not enabled: send the password");
    await takeLoginAttempt(ctx, user.email);
    if (!(await useCode(ctx, user, b.code, { allowRecovery: true }))) throw new AppError(400, "invalid_code", "invalid authentication code");
  } else if (hasPassword || hasTotp) {
    throw badRequest(hasPassword ? "password is required to delete the account" : "code is required to delete the account (2FA is on)");
  } else {
    const s = sessionId ? await sessionById(ctx.db, sessionId) : null;
    if (!s || ctx.clock.now() - s.created_at > FRESH_SESSION_MS)
      throw new AppError(403, "reauthentication_required", `sign in again: an account without a password is deleted from a session at most ${FRESH_SESSION_MS / 60000} minutes old`);
    return;
  }
  await clearLoginAttempts(ctx, user.email);
}

/**
 * `DELETE /auth/me { password } | { code }`: deletes the account. In one transaction: every record the user owns
 * (active or soft-deleted) is hard-deleted through the write path (hooks, relations' on_delete, change events
 * after the commit), then the user, whose sessions, refresh tokens, API keys, mail tokens, recovery codes and
 * OAuth links go with it. A record that a relation keeps (`restrict`) from another user's record is 409 and
 * nothing is deleted; among the user's own records the order is found by passes (a record restricted by another
 * of theirs is tried again after it: the hooks of a tried and rolled-back delete have run, as for any failed
 * operation). Answers the count of owned records deleted per collection.
 */
export async function deleteOwnAccount(ctx: AppContext, p: Principal, input: Checked<Record<string, unknown>>, client: ClientInfo): Promise<{ ok: true; deleted: Record<string, number> }> {
  const { user, sessionId } = await currentUser(ctx, p);
  const b = bodyOf(input) ?? {};
  if (typeof b !== "object" || Array.isArray(b)) throw badRequest("the body must be an object: { password } or { code }");
  await proveHolder(ctx, user, sessionId, b, hashTurnOf(client));
  const deleted = await inTransaction(ctx, async () => {
    const counts: Record<string, number> = {};
    let pending: { col: string; id: string }[] = [];
    for (const col of await listCollections(ctx)) {
      const ids = await ownedIds(ctx, col, user.id);
      if (ids.length) counts[col.name] = ids.length;
      for (const id of ids) pending.push({ col: col.name, id });
    }
    // Passes until every owned record is gone: one restricted only by another owned record waits for it.
    while (pending.length) {
      const kept: typeof pending = [];
      let refusal: unknown = null;
      for (const item of pending) {
        try {
          await hardDeleteRecord(ctx, item.col, item.id, p);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          // Already gone: a cascade from another of the user's records took it.
          if (err.status === 404) continue;
          if (err.status !== 409) throw err;
          refusal = err;
          kept.push(item);
        }
      }
      if (kept.length === pending.length) throw refusal;
      pending = kept;
    }
    await deleteUserRow(ctx.db, user.id);
    return counts;
  });
  ctx.log.info("account deleted by its user", { user: user.id, records: Object.values(deleted).reduce((a, n) => a + n, 0) });
  return { ok: true, deleted };
}
