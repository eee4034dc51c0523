import { afterEach, describe, expect, test } from "bun:test";
import { createLogger, formatLine, type LogFormat, type LogLevel } from "../../src/log.ts";
import { createTestApp, type TestApp } from "../helpers/app.ts";

// The server's logger writes the request line through its own formatter: the line must be exactly what
// the general formatter writes for the same fields, in both formats, with redaction and odd paths.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

function app(format: LogFormat, level: LogLevel = "info") {
  const lines: string[] = [];
  const t = createTestApp({ requestLog: true, context: { log: createLogger({ format, level, write: (l) => void lines.push(l) }) } });
  apps.push(t);
  return { t, lines: () => lines.filter((l) => l.includes("request") && !l.includes("listening")) };
}

// The time stamp and duration vary: compare the rest.
const TIME = /^\S+|"time":"[^"]*"/;
function expected(format: LogFormat, status: number, method: string, path: string, line: string, id: string): string {
  const duration = format === "json" ? Number(/"duration_ms":([0-9.]+)/.exec(line)![1]) : Number(/duration_ms=([0-9.]+)/.exec(line)![1]);
  const level = status >= 500 ? "error" : "info";
  return formatLine(format, level, "request", { method, path, status, duration_ms: duration, request_id: id }) + "\n";
}

describe("request log line format", () => {
  for (const format of ["text", "json"] as const) {
    test(`${format}: the request line equals the general formatter's, secrets redacted, odd paths quoted`, async () => {
      const { t, lines } = app(format);
      const sent: [string, string, string, number][] = [
        ["GET", "/health", "/health", 200],
        ["GET", "/api/v1/nope?token=abc&x=1", "/api/v1/nope?token=***&x=1", 404],
        ["GET", '/api/v1/no"pe?a=b c', "/api/v1/no%22pe?a=b%20c", 404],
      ];
      for (const [method, path, , status] of sent) expect((await t.req(method, path)).status).toBe(status);
      const got = lines();
      expect(got).toHaveLength(sent.length);
      got.forEach((line, i) => {
        const [method, , logged, status] = sent[i];
        const id = (format === "json" ? /"request_id":"([^"]+)"/ : /request_id=(\S+)/).exec(line)![1];
        expect(line.replace(TIME, "")).toBe(expected(format, status, method, logged, line, id).replace(TIME, ""));
      });
    });
  }

  test("a client's X-Request-Id is written as sent; at level warn no request line is written", async () => {
    const { t, lines } = app("text");
    const res = await t.req("GET", "/health", { headers: { "x-request-id": "trace-1.2:3/4+5=6" } });
    expect(res.headers.get("x-request-id")).toBe("trace-1.2:3/4+5=6");
    expect(lines()[0]).toMatch(/ INFO request method=GET path=\/health status=200 duration_ms=[0-9.]+ request_id=trace-1\.2:3\/4\+5=6\n$/);
    const quiet = app("text", "warn");
    expect((await quiet.t.req("GET", "/health")).status).toBe(200);
    expect(quiet.lines()).toEqual([]);
  });
});
