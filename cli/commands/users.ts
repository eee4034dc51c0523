import type { Command } from "commander";
import { createUser, requireUser, userToJson, type UserJson } from "../../src/users/users.ts";
import { askPassword, isInteractive } from "../prompts.ts";
import { UsageError, collect, keyValues, output, when, withContext } from "../run.ts";

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

/** `baas users …`: the same service functions as /admin/users. */
export function registerUsers(program: Command): void {
  const group = program
    .command("users")
    .description("create and manage user accounts")
    .addHelpText(
      "after",
      `
Examples:
  $ echo "$PASSWORD" | baas users create ada@example.com --password-stdin --role editor --verified
  $ baas users list --search example.com --json
  $ baas users show ada@example.com`,
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
(they can sign in by magic link or OAuth, or reset it).

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
      const res = await withContext(cmd, async (ctx) =>
        userToJson(await createUser(ctx, { email, password, roles: opts.role ?? [], isVerified: !!opts.verified })),
      );
      output(cmd, res, () => showUser(res));
    });

  group
    .command("show <user>")
    .description("show one user, by email or id")
    .addHelpText("after", "\nExample:\n  $ baas users show ada@example.com --json")
    .action(async (who: string, _opts: unknown, cmd: Command) => {
      const res = await withContext(cmd, (ctx) => userToJson(requireUser(ctx, who)));
      output(cmd, res, () => showUser(res));
    });
}
