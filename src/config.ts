import { join, resolve } from "node:path";
import { parseIpRange, type IpRange } from "./ip.ts";
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from "./log.ts";

/** Typed server configuration, from flags and environment (flags win), validated once. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  dbPath: string;
  /** Where the data lives: the SQLite file in the data dir (default), or a PostgreSQL database. */
  database: DatabaseConfig;
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
  /**
   * The operator's reverse proxies (TRUST_PROXY, `--trust-proxy`): a request from one of them comes from the
   * right-most `X-Forwarded-For` address not in the list. Empty: the socket's peer, and the header is ignored.
   */
  trustProxy: IpRange[];
  /** Where uploaded files live (CONTRACT §14): `<data>/storage/` by default, or an S3-compatible bucket. */
  storage: StorageConfig;
  /** Base URLs that replace the real OAuth providers' hosts (tests point them at stub servers); null in production. */
  oauthBaseUrls: { codehost: string | null; portal: string | null };
}

/** The storage engine and its settings. */
export type DatabaseConfig =
  | { engine: "sqlite" }
  | {
      engine: "postgres";
      /** The postgres:// URL as given (it may hold a password: never log it). */
      url: string;
      /** Connections in the pool (DB_POOL_SIZE). */
      poolSize: number;
      /** Longest a statement may run, in ms; 0 = no limit (DB_STATEMENT_TIMEOUT_MS). */
      statementTimeoutMs: number;
    };

/** Where files are stored: a folder, or a bucket (and key prefix) of an S3-compatible service. */
export type StorageConfig =
  | { kind: "local"; dir: string }
  | {
      kind: "s3";
      bucket: string;
      /** Keys start with it (no leading or trailing slash; "" for none). */
      prefix: string;
      endpoint?: string;
      region?: string;
      accessKeyId?: string;
      /** Never logged. */
      secretAccessKey?: string;
    };

export interface ConfigFlags {
  /** `s3://bucket/prefix` (env STORAGE_URL); absent = `<data>/storage/`. */
  storage?: string;
  port?: string | number;
  /** A postgres:// URL (env DATABASE_URL); absent = SQLite in the data dir. */
  database?: string;
  host?: string;
  data?: string;
  sync?: string;
  logFormat?: string;
  /** Comma-separated addresses or CIDR ranges (env TRUST_PROXY). */
  trustProxy?: string;
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
    database: databaseFrom(flags.database ?? env.DATABASE_URL, env),
    sync: syncRaw,
    adminSecret: env.ADMIN_SECRET ? env.ADMIN_SECRET : null,
    publicUrl,
    appUrl,
    smtpUrl: smtpUrlFrom(env.SMTP_URL),
    mailFrom: env.MAIL_FROM || "no-reply@localhost",
    lockoutMaxAttempts: intFrom("LOCKOUT_MAX_ATTEMPTS", env.LOCKOUT_MAX_ATTEMPTS, 10, 1),
    lockoutDurationMs: intFrom("LOCKOUT_DURATION_MS", env.LOCKOUT_DURATION_MS, 900_000, 0),
    corsOrigins: cors === "*" || cors === "" ? "*" : cors.split(",").map((s) => s.trim()).filter(Boolean),
    hooksDir: resolve(env.HOOKS_DIR || join(dataDir, "hooks")),
    maxBodyBytes: 16 * 1024 * 1024,
    logFormat,
    logLevel,
    trustProxy: trustProxyFrom(flags.trustProxy ?? env.TRUST_PROXY),
    storage: storageFrom(flags.storage ?? env.STORAGE_URL, dataDir, env),
    oauthBaseUrls: {
      codehost: env.OAUTH_CODEHOST_BASE_URL ? stripSlash(env.OAUTH_CODEHOST_BASE_URL) : null,
      portal: env.OAUTH_PORTAL_BASE_URL ? stripSlash(env.OAUTH_PORTAL_BASE_URL) : null,
    },
  };
}

/**
 * Parses `--database` / DATABASE_URL: empty means SQLite; else a postgres:// (or postgresql://) URL with a
 * host and a database name. Errors never repeat the URL, which may hold a password.
 */
function databaseFrom(raw: string | undefined, env: Record<string, string | undefined>): DatabaseConfig {
  const value = raw?.trim();
  if (!value) return { engine: "sqlite" };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("database must be a postgres:// URL (postgres://user:password@host:port/database)");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigError(`database must be a postgres:// URL, got a ${url.protocol}// URL`);
  }
  if (!url.hostname) throw new ConfigError("database URL has no host");
  if (!/^\/[^/]+$/.test(url.pathname)) throw new ConfigError("database URL must name a database: postgres://host:port/database");
  const poolSize = intFrom("DB_POOL_SIZE", env.DB_POOL_SIZE, 10, 1);
  if (poolSize > 1000) throw new ConfigError(`DB_POOL_SIZE must be at most 1000, got ${poolSize}`);
  return { engine: "postgres", url: value, poolSize, statementTimeoutMs: intFrom("DB_STATEMENT_TIMEOUT_MS", env.DB_STATEMENT_TIMEOUT_MS, 30_000, 0) };
}

/**
 * SMTP_URL: the mailer loads nodemailer with the first mail, so a URL it cannot use is refused here, at
 * start, rather than at that mail. Never repeats the URL, which may hold a password.
 */
function smtpUrlFrom(raw: string | undefined): string | null {
  if (!raw) return null;
  if (!/^smtps?:/i.test(raw)) throw new ConfigError("SMTP_URL must be an smtp:// or smtps:// URL (smtp://user:password@host:587)");
  return raw;
}

/** TRUST_PROXY: comma-separated IPv4/IPv6 addresses or CIDR ranges (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`). */
function trustProxyFrom(raw: string | undefined): IpRange[] {
  const out: IpRange[] = [];
  for (const item of (raw ?? "").split(",")) {
    const s = item.trim();
    if (!s) continue;
    const range = parseIpRange(s);
    if (!range) throw new ConfigError(`TRUST_PROXY: "${s.slice(0, 60)}" is not an IP address or CIDR range (e.g. 10.0.0.1, 10.0.0.0/8, fd00::/8)`);
    out.push(range);
  }
  return out;
}

function oneOf<T extends string>(name: string, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join("|")}, got "${raw}"`);
  return raw as T;
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

/**
 * Parses `--storage` / STORAGE_URL: empty means `<data>/storage/`; `s3://bucket[/prefix]` a bucket of any
 * S3-compatible service (S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY); a path a folder.
 */
export function storageFrom(raw: string | undefined, dataDir: string, env: Record<string, string | undefined> = {}): StorageConfig {
  const value = (raw ?? "").trim();
  if (!value) return { kind: "local", dir: join(dataDir, "storage") };
  if (!/^s3:\/\//i.test(value)) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) throw new ConfigError("storage must be s3://bucket/prefix or a folder");
    return { kind: "local", dir: resolve(value) };
  }
  const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(value);
  if (!m || !/^[a-z0-9][a-z0-9.-]{1,62}$/.test(m[1]!)) throw new ConfigError("storage must be s3://bucket/prefix with a valid bucket name");
  const prefix = m[2]!.replace(/^\/+|\/+$/g, "");
  return {
    kind: "s3",
    bucket: m[1]!,
    prefix,
    endpoint: env.S3_ENDPOINT || undefined,
    region: env.S3_REGION || undefined,
    accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
  };
}
