import { writeSync } from "node:fs";

/** Structured log lines on stderr. Never pass secrets here. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /**
   * The request log's line (the `request` message with method, path, status, duration_ms and request_id,
   * exactly as `info`/`error` would write it), formatted without a fields object; `request.enabled(status)`
   * tells whether that level is on, so the caller can skip preparing the line. Optional: without it, the
   * caller uses info/error.
   */
  request?: RequestLine;
}

/** Writes one request line at info (status < 500) or error level. */
export type RequestLine = ((method: string, path: string, status: number, durationMs: number, requestId: string) => void) & {
  enabled(status: number): boolean;
};

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

// A value written as it is in text lines: printable ASCII without spaces or double quotes.
const PLAIN = /^[\x21\x23-\x7e]+$/;

/**
 * `key=value` pairs. A value that is not plain printable ASCII (spaces, quotes, control characters, structure)
 * is written as JSON, so a line stays one line and a client's text cannot forge another one.
 */
function textFields(fields: Record<string, unknown>): string {
  let out = "";
  for (const k in fields) {
    const v = fields[k];
    if (v === undefined) continue;
    const text = typeof v === "number" && Number.isFinite(v) ? String(v) : typeof v === "string" && PLAIN.test(v) ? v : safeJson(v);
    out += out ? ` ${k}=${text}` : `${k}=${text}`;
  }
  return out;
}

// The time stamp of the last line: lines written in the same millisecond share one ISO string.
let stampMs = NaN;
let stampIso = "";
function isoNow(): string {
  const ms = Date.now();
  if (ms !== stampMs) {
    stampMs = ms;
    stampIso = new Date(ms).toISOString();
  }
  return stampIso;
}

/** One log line in the given format, without the trailing newline. */
export function formatLine(format: LogFormat, level: LogLevel, msg: string, fields?: Record<string, unknown>, now?: Date): string {
  const time = now ? now.toISOString() : isoNow();
  if (format === "json") return safeJson({ time, level, msg, ...fields });
  const extra = fields ? textFields(fields) : "";
  return `${time} ${level.toUpperCase()} ${msg}${extra ? " " + extra : ""}`;
}

// Log lines for stderr wait here and go out together: when 64 KiB have gathered, 50 ms after the
// first of them, before a start/stop line of the server, and at exit. One write per batch instead
// of a synchronous write per request.
const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 50;
let pending = "";
let flushTimer: ReturnType<typeof setTimeout> | null = null;
let exitHookSet = false;

/** Writes the log lines still waiting for stderr, synchronously (so nothing is lost at exit). */
export function flushLog(): void {
  if (flushTimer) clearTimeout(flushTimer);
  flushTimer = null;
  if (!pending) return;
  let out = Buffer.from(pending);
  pending = "";
  while (out.length) {
    try {
      out = out.subarray(writeSync(2, out));
    } catch (err) {
      // A full non-blocking pipe: wait for the reader rather than drop lines.
      if ((err as NodeJS.ErrnoException).code !== "EAGAIN") return;
      Bun.sleepSync(1);
    }
  }
}

/** Writes one line to stderr now, after the log lines still waiting (the server's start and stop lines). */
export function writeLineNow(line: string): void {
  pending += line + "\n";
  flushLog();
}

function writeStderr(line: string): void {
  pending += line;
  if (!exitHookSet) {
    exitHookSet = true;
    process.on("exit", flushLog);
  }
  if (pending.length >= FLUSH_BYTES) flushLog();
  else if (!flushTimer) {
    flushTimer = setTimeout(flushLog, FLUSH_MS);
    flushTimer.unref?.();
  }
}

/**
 * A logger writing lines at `level` and above (error is the highest) to `write` (default stderr, one write
 * per line; `buffered` gathers them, see flushLog: the server's request log).
 */
export function createLogger(
  opts: { format?: LogFormat; level?: LogLevel; write?: (line: string) => void; buffered?: boolean } = {},
): Logger {
  const format = opts.format ?? "text";
  const max = LOG_LEVELS.indexOf(opts.level ?? "info");
  const write = opts.write ?? (opts.buffered ? writeStderr : (l: string) => void process.stderr.write(l));
  const off = (): void => {};
  const at = (level: LogLevel) =>
    LOG_LEVELS.indexOf(level) <= max
      ? (msg: string, fields?: Record<string, unknown>): void => write(formatLine(format, level, msg, fields) + "\n")
      : off;
  const infoOn = LOG_LEVELS.indexOf("info") <= max;
  const errorOn = LOG_LEVELS.indexOf("error") <= max;
  const request = ((method: string, path: string, status: number, durationMs: number, requestId: string): void => {
    const level: LogLevel = status >= 500 ? "error" : "info";
    if (format === "json") {
      write(formatLine(format, level, "request", { method, path, status, duration_ms: durationMs, request_id: requestId }) + "\n");
      return;
    }
    // The text line as textFields writes it: numbers as they are, strings plain or as JSON.
    const m = PLAIN.test(method) ? method : safeJson(method);
    const p = PLAIN.test(path) ? path : safeJson(path);
    const id = PLAIN.test(requestId) ? requestId : safeJson(requestId);
    const tag = level === "error" ? "ERROR" : "INFO";
    write(`${isoNow()} ${tag} request method=${m} path=${p} status=${status} duration_ms=${durationMs} request_id=${id}\n`);
  }) as RequestLine;
  request.enabled = (status) => (status >= 500 ? errorOn : infoOn);
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), request };
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
