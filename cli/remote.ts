import type { Command } from "commander";
import type { AppContext } from "../src/context.ts";
import { AppError } from "../src/errors.ts";
import { UsageError, withContext } from "./run.ts";

/**
 * Where a command that changes the schema sends its work: the data directory (or `--database`) directly, as
 * every command does, or a running server's admin API (`--url`, env BAAS_URL) with the admin secret (or an
 * admin token) from the environment (ADMIN_SECRET): for a CI job that reaches the server but not its
 * database. Both answer with the admin API's bodies and errors.
 */
export interface Target {
  /** Calls the admin API route `method path` (under /api/v1/admin) with a JSON body; locally, `local` does the same through the services. */
  call<T>(method: string, path: string, body: unknown, local: (ctx: AppContext) => Promise<T>): Promise<T>;
  /** Where the work goes, for messages: the server's address, or null for the data directory. */
  url: string | null;
}

/** Options of a command that may work on a running server. */
export interface RemoteOptions {
  url?: string;
}

/** Adds `--url` to a command group's commands. */
export function addUrlOption(cmd: Command): Command {
  return cmd.option("--url <url>", "work on the running server at this address through its admin API (env BAAS_URL; the secret from ADMIN_SECRET)");
}

/** The server's base address from `--url` or BAAS_URL, or null: work on the data directory. */
function serverUrl(opts: RemoteOptions): string | null {
  const raw = opts.url ?? process.env.BAAS_URL;
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url: not an address: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url: use http:// or https://, not ${url.protocol}`);
  return url.href.replace(/\/+$/, "");
}

/** Runs `fn` with the target the command's options name (see Target). */
export async function withTarget<T>(cmd: Command, opts: RemoteOptions, fn: (target: Target) => Promise<T>): Promise<T> {
  const url = serverUrl(opts);
  if (url === null) return await withContext(cmd, (ctx) => fn({ url: null, call: (_m, _p, _b, local) => local(ctx) }));
  const secret = process.env.ADMIN_SECRET;
  if (!secret) throw new UsageError("--url needs the admin secret (or an admin token) in the environment variable ADMIN_SECRET");
  return await fn({
    url,
    async call<R>(method: string, path: string, body: unknown): Promise<R> {
      let res: Response;
      try {
        res = await fetch(`${url}/api/v1/admin${path}`, {
          method,
          // SECURITY: the secret travels only in this header, never in the address or the output.
          headers: { "x-admin-token": secret, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        throw new AppError(503, "unavailable", `cannot reach the server at ${url}: ${err instanceof Error ? err.message : String(err)}`);
      }
      const text = await res.text();
      let data: any = null;
      try {
        data = text ? JSON.parse(text) : null;
      } catch {
        data = null;
      }
      if (res.ok) return data as R;
      if (data && typeof data.error === "string") {
        const { error, code, ...extra } = data;
        throw new AppError(res.status, typeof code === "string" ? code : "http_error", error, extra);
      }
      throw new AppError(res.status, "http_error", `the server at ${url} answered ${res.status} ${res.statusText}`.trim());
    },
  });
}
