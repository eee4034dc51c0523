/** Structured log lines on stderr. Never pass secrets here. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

function line(level: string, msg: string, fields?: Record<string, unknown>) {
  const extra = fields && Object.keys(fields).length ? " " + safeJson(fields) : "";
  process.stderr.write(`${new Date().toISOString()} ${level} ${msg}${extra}\n`);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, val) => (val instanceof Error ? { message: val.message, stack: val.stack } : val));
  } catch {
    return String(v);
  }
}

export const stderrLogger: Logger = {
  info: (m, f) => line("INFO", m, f),
  warn: (m, f) => line("WARN", m, f),
  error: (m, f) => line("ERROR", m, f),
};

/** A logger that keeps lines in memory (tests read them) and prints nothing. */
export function memoryLogger(): Logger & { lines: { level: string; msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  return {
    lines,
    info: (msg, fields) => void lines.push({ level: "info", msg, fields }),
    warn: (msg, fields) => void lines.push({ level: "warn", msg, fields }),
    error: (msg, fields) => void lines.push({ level: "error", msg, fields }),
  };
}
