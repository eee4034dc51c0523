import { join, resolve } from "node:path";
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from "./log.ts";

/** Typed server configuration, from flags and environment (flags win), validated once. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  dbPath: string;
  sync: "normal" | "full";
  adminSecret: string | null;
  publicUrl: string;
  appUrl: string;
  smtpUrl: string | null;
  mailFrom: string;
  lockoutMaxAttempts: number;
  lockoutDurationMs: number;
  corsOrigins: string[] | "*";
  hooksDir: string;
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: number;
  /** Format of log lines on stderr (the request log included). */
  logFormat: LogFormat;
  /** Lowest level written: error < warn < info (each request) < debug. */
  logLevel: LogLevel;
  /** Base URLs that replace the real OAuth providers' hosts (tests point them at stub servers); null in production. */
  oauthBaseUrls: { codehost: string | null; portal: string | null };
}

export interface ConfigFlags {
  port?: string | number;
  host?: string;
  data?: string;
  sync?: string;
  logFormat?: string;
}

export class ConfigError extends Error {}

function intFrom(name: string, raw: string | number | undefined, fallback: number, min = 0): number {
  if (raw === undefined || raw === "") return fallback;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** Builds the config from CLI flags and an environment (defaults to process.env). */
export function loadConfig(flags: ConfigFlags = {}, env: Record<string, string | undefined> = process.env): Config {
  const port = intFrom("port", flags.port ?? env.PORT, 8090, 0);
  if (port > 65535) throw new ConfigError(`port must be at most 65535, got ${port}`);
  const host = flags.host ?? env.HOST ?? "0.0.0.0";
  const dataDir = resolve(flags.data ?? env.DATA_DIR ?? "./baas_data");
  const syncRaw = (flags.sync ?? env.SQLITE_SYNC ?? "normal").toLowerCase();
  if (syncRaw !== "normal" && syncRaw !== "full") throw new ConfigError(`sync must be "normal" or "full", got "${syncRaw}"`);
  const logFormat = oneOf("log format", (flags.logFormat ?? env.LOG_FORMAT ?? "text").toLowerCase(), LOG_FORMATS);
  const logLevel = oneOf("LOG_LEVEL", (env.LOG_LEVEL ?? "info").toLowerCase(), LOG_LEVELS);
  const publicUrl = stripSlash(env.PUBLIC_URL || `http://localhost:${port}`);
  const appUrl = stripSlash(env.APP_URL || publicUrl);
  const cors = (env.CORS_ORIGINS ?? "*").trim();
  return {
    port,
    host,
    dataDir,
    dbPath: join(dataDir, "baas.db"),
    sync: syncRaw,
    adminSecret: env.ADMIN_SECRET ? env.ADMIN_SECRET : null,
    publicUrl,
    appUrl,
    smtpUrl: env.SMTP_URL || null,
    mailFrom: env.MAIL_FROM || "no-reply@localhost",
    lockoutMaxAttempts: intFrom("LOCKOUT_MAX_ATTEMPTS", env.LOCKOUT_MAX_ATTEMPTS, 10, 1),
    lockoutDurationMs: intFrom("LOCKOUT_DURATION_MS", env.LOCKOUT_DURATION_MS, 900_000, 0),
    corsOrigins: cors === "*" || cors === "" ? "*" : cors.split(",").map((s) => s.trim()).filter(Boolean),
    hooksDir: resolve(env.HOOKS_DIR || join(dataDir, "hooks")),
    maxBodyBytes: 16 * 1024 * 1024,
    logFormat,
    logLevel,
    oauthBaseUrls: {
      codehost: env.OAUTH_CODEHOST_BASE_URL ? stripSlash(env.OAUTH_CODEHOST_BASE_URL) : null,
      portal: env.OAUTH_PORTAL_BASE_URL ? stripSlash(env.OAUTH_PORTAL_BASE_URL) : null,
    },
  };
}

function oneOf<T extends string>(name: string, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join("|")}, got "${raw}"`);
  return raw as T;
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, "");
}
