import type { Command } from "commander";
import {
  adminCreateUser,
  adminUpdateUser,
  deleteUser,
  getUser,
  getUserSecurity,
  listUsers,
  resetUserTotp,
  revokeSessionsOfUser,
  unlockUser,
  type UserSecurityJson,
} from "../../src/auth/admin-users.ts";
import type { UserJson } from "../../src/users/users.ts";
import { queryChecker } from "../../src/http/check.ts";
import { UserListQuery } from "../../src/http/schemas.ts";
import { askPassword, isInteractive } from "../prompts.ts";
import { UsageError, collect, confirmDestructive, keyValues, output, parseJsonArg, serviceAction, table, when, withContext } from "../run.ts";

/** `--limit` and `--page` are checked as the admin API checks its query string. */
const listQuery = queryChecker(UserListQuery);

/** Human rendering of a user object. */
export function showUser(u: UserJson): string {
  return keyValues({ ...u, roles: u.roles.join(", ") || "(none)", created_at: when(u.created_at) });
}

/** Reads the whole of stdin (for --password-stdin), without its final line break. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

/** `baas users …`: the same service functions as /admin/users. A user is named by email or id. */
export function registerUsers(program: Command): void {
  const group = program
    .command("users")
    .description("create and manage user accounts (a user is named by email or id)")
    .addHelpText(
      "after",
      `
Examples:
  $ printf '%s' "$PASSWORD" | baas users create ada@example.com --password-stdin --role editor --verified
  $ baas users list --search example.com --json
  $ baas users show ada@example.com
  $ baas users roles ada@example.com editor admin
  $ baas users metadata ada@example.com '{"plan":"pro"}'
  $ baas users revoke-sessions ada@example.com
  $ baas users unlock ada@example.com
  $ baas users reset-2fa ada@example.com
  $ baas users security ada@example.com
  $ baas users delete ada@example.com --yes`,
    );

  group
    .command("create <email>")
    .description("create a user (on a terminal, asks for the password; in scripts use --password-stdin)")
    .option("--password-stdin", "read the password from stdin")
    .option("--role <role>", "give a role (repeatable)", collect)
    .option("--verified", "mark the email as verified")
    .addHelpText(
      "after",
      `
Without --password-stdin and without a terminal the user gets no password
(they can sign in by magic link or OAuth, or set one with forgot-password).

Examples:
  $ printf '%s' "s3cret-pass" | baas users create ada@example.com --password-stdin --role admin --role editor --verified
  $ baas users create bob@example.com          # asks for the password`,
    )
    .action(async (email: string, opts: { passwordStdin?: boolean; role?: string[]; verified?: boolean }, cmd: Command) => {
      let password: string | undefined;
      if (opts.passwordStdin) password = await readStdin();
      else if (isInteractive()) {
        const answer = await askPassword(`Password for ${email} (empty for none)`);
        if (answer === null) throw new UsageError("cancelled");
        password = answer || undefined;
      }
      const res = await withContext(cmd, (ctx) =>
        adminCreateUser(ctx, { email, password, roles: opts.role ?? [], is_verified: !!opts.verified }),
      );
      output(cmd, res, () => showUser(res));
    });

  group
    .command("list")
    .description("list users, newest first")
    .option("--search <text>", "only emails containing this text")
    .option("--limit <n>", "at most n users (1..500, default 50)")
    .option("--page <n>", "page number, from 1")
    .addHelpText("after", "\nExample:\n  $ baas users list --search @example.com --json   # { items: [user, ...], total }")
    .action(async (opts: { search?: string; limit?: string; page?: string }, cmd: Command) => {
      let query: ReturnType<typeof listQuery.parse>;
      try {
        query = listQuery.parse(opts);
      } catch (err) {
        // A bad --limit or --page is the command line's mistake: exit 2, as other bad option values.
        throw new UsageError(err instanceof Error ? err.message : String(err));
      }
      const res = await withContext(cmd, (ctx) => listUsers(ctx, query));
      output(cmd, res, () => {
        const rows = table(
          ["ID", "EMAIL", "VERIFIED", "ROLES", "CREATED"],
          res.items.map((u) => [u.id, u.email, u.is_verified ? "yes" : "no", u.roles.join(","), when(u.created_at)]),
        );
        return `${rows}\n(${res.items.length} of ${res.total})`;
      });
    });

  group
    .command("show <user>")
    .description("show one user")
    .addHelpText("after", "\nExample:\n  $ baas users show ada@example.com --json")
    .action(serviceAction((ctx, [who]) => getUser(ctx, who), showUser));

  group
    .command("roles <user> <role...>")
    .description("replace the user's roles (they reach the access token at the next login or refresh)")
    .addHelpText("after", "\nExample:\n  $ baas users roles ada@example.com editor admin")
    .action(serviceAction((ctx, [who, roles]) => adminUpdateUser(ctx, who, { roles }), showUser));

  group
    .command("metadata <user> <json>")
    .description("replace the user's metadata with a JSON object (or @file)")
    .addHelpText("after", `\nExamples:\n  $ baas users metadata ada@example.com '{"plan":"pro","team":{"id":7}}'\n  $ baas users metadata ada@example.com @meta.json`)
    .action(serviceAction((ctx, [who, json]) => adminUpdateUser(ctx, who, { metadata: parseJsonArg(json) }), showUser));

  group
    .command("delete <user>")
    .description("delete a user with their sessions, API keys and linked accounts (their records stay)")
    .option("-y, --yes", "do not ask for confirmation (required without a terminal)")
    .addHelpText("after", "\nExample:\n  $ baas users delete ada@example.com --yes")
    .action(async (who: string, opts: { yes?: boolean }, cmd: Command) => {
      const res = await withContext(cmd, async (ctx) => {
        const user = await getUser(ctx, who);
        const go = await confirmDestructive(opts.yes, `Delete user ${user.email}?`, `delete user ${user.email}`);
        return go ? await deleteUser(ctx, user.id) : null;
      });
      if (!res) throw new Error("cancelled, nothing deleted");
      output(cmd, res, () => `deleted user ${who} (${res.id})`);
    });

  group
    .command("revoke-sessions <user>")
    .description("sign the user out everywhere: every session and refresh token stops working at once")
    .addHelpText("after", "\nExample:\n  $ baas users revoke-sessions ada@example.com --json   # { ok, sessions_revoked }")
    .action(serviceAction((ctx, [who]) => revokeSessionsOfUser(ctx, who), (res) => `revoked ${res.sessions_revoked} session(s)`));

  group
    .command("unlock <user>")
    .description("clear a lockout after too many failed logins")
    .addHelpText("after", "\nExample:\n  $ baas users unlock ada@example.com")
    .action(serviceAction((ctx, [who]) => unlockUser(ctx, who), (res) => `unlocked ${res.email}`));

  group
    .command("reset-2fa <user>")
    .description("turn two-factor authentication off for a user who lost their authenticator (secret and recovery codes are dropped)")
    .addHelpText("after", "\nExample:\n  $ baas users reset-2fa ada@example.com --json   # { id, email, totp_enabled: false, ... }")
    .action(serviceAction((ctx, [who]) => resetUserTotp(ctx, who), (res) => `two-factor authentication is off for ${res.email}`));

  group
    .command("security <user>")
    .description("show 2FA on/off, lockout, linked OAuth accounts and API keys of a user")
    .addHelpText("after", "\nExample:\n  $ baas users security ada@example.com --json")
    .action(serviceAction((ctx, [who]) => getUserSecurity(ctx, who), showSecurity));
}

function showSecurity(s: UserSecurityJson): string {
  return keyValues({
    email: s.email,
    two_factor: s.totp_enabled ? "on" : "off",
    locked_until: s.locked_until === null ? "not locked" : when(s.locked_until),
    oauth_accounts: s.oauth_accounts.map((a) => `${a.provider} (${a.email ?? "no email"})`).join(", ") || "(none)",
    api_keys: s.api_keys.map((k) => `${k.name} [${k.id}]`).join(", ") || "(none)",
  });
}
