/** Structured log lines on stderr. Never pass secrets here. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "error" | "warn" | "info" | "debug";
export type LogFormat = "text" | "json";

export const LOG_LEVELS: readonly LogLevel[] = ["error", "warn", "info", "debug"];
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** Turns errors into { message, stack } (JSON.stringify would print `{}`). */
function plain(_k: string, val: unknown): unknown {
  return val instanceof Error ? { message: val.message, stack: val.stack } : val;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, plain);
  } catch {
    return String(v);
  }
}

/**
 * `key=value` pairs. A value that is not plain printable ASCII (spaces, quotes, control characters, structure)
 * is written as JSON, so a line stays one line and a client's text cannot forge another one.
 */
function textFields(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" && /^[\x21\x23-\x7e]+$/.test(v) ? v : safeJson(v)}`)
    .join(" ");
}

/** One log line in the given format, without the trailing newline. */
export function formatLine(format: LogFormat, level: LogLevel, msg: string, fields?: Record<string, unknown>, now = new Date()): string {
  if (format === "json") return safeJson({ time: now.toISOString(), level, msg, ...fields });
  const extra = fields && Object.keys(fields).length ? " " + textFields(fields) : "";
  return `${now.toISOString()} ${level.toUpperCase()} ${msg}${extra}`;
}

/** A logger writing lines at `level` and above (error is the highest) to `write` (default stderr). */
export function createLogger(opts: { format?: LogFormat; level?: LogLevel; write?: (line: string) => void } = {}): Logger {
  const format = opts.format ?? "text";
  const max = LOG_LEVELS.indexOf(opts.level ?? "info");
  const write = opts.write ?? ((l: string) => void process.stderr.write(l));
  const at =
    (level: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (LOG_LEVELS.indexOf(level) <= max) write(formatLine(format, level, msg, fields) + "\n");
    };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A logger that keeps lines in memory (tests read them) and prints nothing. */
export function memoryLogger(): Logger & { lines: { level: string; msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  return {
    lines,
    debug: (msg, fields) => void lines.push({ level: "debug", msg, fields }),
    info: (msg, fields) => void lines.push({ level: "info", msg, fields }),
    warn: (msg, fields) => void lines.push({ level: "warn", msg, fields }),
    error: (msg, fields) => void lines.push({ level: "error", msg, fields }),
  };
}
