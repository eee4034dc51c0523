import { InvalidArgumentError, type Command } from "commander";
import { existsSync, readFileSync, statSync } from "node:fs";
import { loadConfig, type Config } from "../src/config.ts";
import { closeContext, openContext } from "../src/app-context.ts";
import { type AppContext } from "../src/context.ts";
import { normalizeStoredEmails } from "../src/users/stored-emails.ts";
import { getMeta, PUBLIC_URL_META } from "../src/db/meta.ts";
import { AppError } from "../src/errors.ts";
import { confirm, isInteractive } from "./prompts.ts";

/** Options every command accepts (declared once on the program). */
export interface GlobalOptions {
  data?: string;
  database?: string;
  /** Where uploaded files are (env STORAGE_URL): s3://bucket/prefix or a folder. */
  storage?: string;
  json?: boolean;
}

/** An error of the command line itself (exit 2), as opposed to a failed operation (exit 1). */
export class UsageError extends Error {}

/** The program-wide options as seen from a (sub)command. */
export function globalsOf(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

/**
 * Opens an existing data directory, runs `fn`, and closes it whatever happens. Only `serve` creates a
 * data directory: a mistyped --data must fail here instead of quietly making a new, empty database.
 */
export async function withContext<T>(cmd: Command, fn: (ctx: AppContext) => T | Promise<T>): Promise<T> {
  const { data, database, storage } = globalsOf(cmd);
  const config = loadConfig({ data, database, storage });
  if (config.database.engine === "sqlite") {
    if (!existsSync(config.dataDir)) throw new AppError(404, "not_found", `no baas data directory at ${config.dataDir}`);
    if (!statSync(config.dataDir).isDirectory()) throw new AppError(400, "bad_request", `${config.dataDir} is not a directory (--data names the data directory)`);
  }
  const ctx = await openContext(config).catch((err) => {
    throw unreachable(config, err);
  });
  // Without PUBLIC_URL of its own, the CLI takes the one of the server started on this data
  // directory, so addresses it shows (OAuth redirect URLs) are the ones the server uses.
  if (!process.env.PUBLIC_URL) {
    const served = await getMeta(ctx.db, PUBLIC_URL_META);
    if (served) ctx.config.publicUrl = served;
  }
  try {
    // Lookups by email (`users show ada@…`) need the stored emails in their NFC form; a no-op once done.
    await normalizeStoredEmails(ctx);
    return await fn(ctx);
  } finally {
    await ctx.mailer.flush().catch(() => {});
    await closeContext(ctx);
  }
}

/**
 * A PostgreSQL database that cannot be reached, said with where it is (host, port, database: never the
 * user or password of the URL) and why; any other error as it is.
 */
export function unreachable(config: Config, err: unknown): unknown {
  if (config.database.engine !== "postgres" || !(err instanceof AppError) || err.code !== "unavailable") return err;
  const url = new URL(config.database.url);
  const where = `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  const cause = (err as { cause?: unknown }).cause;
  let why = cause instanceof Error ? cause.message : "";
  // A driver message could quote the URL: never print its credentials.
  for (const secret of [url.password, decodeURIComponent(url.password)]) if (secret) why = why.split(secret).join("***");
  return new AppError(503, "unavailable", `cannot use the PostgreSQL database at ${where}${why ? `: ${why}` : ""}`);
}

/**
 * The usual action: open the data directory, call one service with the command's
 * arguments and options, print its result (JSON with --json, else `human`).
 */
export function serviceAction<R>(
  call: (ctx: AppContext, args: any[], opts: any) => R | Promise<R>,
  human: (res: Awaited<R>, args: any[]) => string,
): (...all: unknown[]) => Promise<void> {
  return async (...all) => {
    const cmd = all[all.length - 1] as Command;
    const args = all.slice(0, -2);
    const res = await withContext(cmd, (ctx) => call(ctx, args, all[all.length - 2]));
    output(cmd, res, () => human(res, args));
  };
}

/** Prints a result: the JSON body with --json, else the human rendering. */
export function output(cmd: Command, value: unknown, human: () => string): void {
  if (globalsOf(cmd).json) process.stdout.write(JSON.stringify(value, null, 2) + "\n");
  else {
    const text = human();
    if (text) process.stdout.write(text.endsWith("\n") ? text : text + "\n");
  }
}

/** Writes a note for people to stderr (never mixed into stdout, which scripts parse). */
export function note(cmd: Command, text: string): void {
  if (!globalsOf(cmd).json) process.stderr.write(text + "\n");
}

/**
 * Destructive commands go ahead with --yes; on a terminal they ask; in a script
 * without --yes they refuse (exit 2), so nothing is destroyed by accident.
 */
export async function confirmDestructive(yes: boolean | undefined, question: string, what: string): Promise<boolean> {
  if (yes) return true;
  if (!isInteractive()) throw new UsageError(`refusing to ${what} without --yes (no terminal to confirm on)`);
  return confirm(question);
}

/**
 * For commands whose synopsis has no `--yes` (CONTRACT §8, §13: `fields retype|drop`, `webhooks remove`): asks on a
 * terminal unless `--yes`; without a terminal (a script, CI) the command is its own confirmation.
 */
export async function confirmOnTerminal(yes: boolean | undefined, question: string): Promise<boolean> {
  if (yes || !isInteractive()) return true;
  return confirm(question);
}

const SIMPLE_RULES = new Set(["public", "authenticated", "owner", "disabled"]);

/**
 * Parses a rule as written on the command line: public, authenticated, owner, disabled, role:<name>, or any other
 * text as an expression (CONTRACT §8, §12), which the service checks like the admin API does.
 */
export function parseRuleArg(raw: string): string | { role: string } {
  if (SIMPLE_RULES.has(raw)) return raw;
  if (/^role:[A-Za-z0-9_.:-]+$/.test(raw)) return { role: raw.slice(5) };
  if (!raw.trim()) throw new InvalidArgumentError("expected public, authenticated, owner, disabled, role:<name> or an expression, got an empty value");
  return raw;
}

/** Parses a JSON argument, or `@file` to read the JSON from a file. */
export function parseJsonArg(raw: string): unknown {
  let text = raw;
  if (raw.startsWith("@")) {
    try {
      text = readFileSync(raw.slice(1), "utf8");
    } catch (err) {
      throw new InvalidArgumentError(`cannot read ${raw.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidArgumentError(`not valid JSON: ${text.length > 60 ? text.slice(0, 60) + "…" : text}`);
  }
}

/** Collects a repeatable option into an array. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Renders rows as an aligned text table. */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  if (rows.length === 0) return "(none)";
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "" : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ")).join("\n");
}

/** Renders an object as `key: value` lines (nested values as compact JSON). */
export function keyValues(obj: Record<string, unknown>): string {
  const width = Math.max(0, ...Object.keys(obj).map((k) => k.length));
  return Object.entries(obj)
    .map(([k, v]) => `${(k + ":").padEnd(width + 1)} ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join("\n");
}

/** A rule value as written on the command line. */
export function ruleText(rule: unknown): string {
  return rule && typeof rule === "object" && "role" in rule ? `role:${(rule as { role: string }).role}` : String(rule);
}

/** A Unix-ms timestamp as an ISO date, or "-". */
export function when(ms: number | null | undefined): string {
  return typeof ms === "number" ? new Date(ms).toISOString() : "-";
}

/** A byte count for people: 512 B, 1.5 KiB, 12.3 MiB, 2.0 GiB. */
export function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
