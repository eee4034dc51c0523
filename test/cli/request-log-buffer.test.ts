import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

// The server gathers request lines and writes them in batches: none may be lost at a stop, none may
// come after the stop lines, and a quiet server still writes its last lines without being stopped.

setDefaultTimeout(60_000);

const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.cleanup();
});

const requestLines = (err: string) => err.split("\n").filter((l) => / INFO request method=/.test(l));

test("a burst of requests then a stop: every request line is written, in order, before the stop lines", async () => {
  const s = await spawnServer();
  servers.push(s);
  const n = 300;
  for (let i = 0; i < n; i += 30)
    await Promise.all(Array.from({ length: 30 }, (_, j) => fetch(`${s.url}/api/v1/burst-${i + j}`).then((r) => r.text())));
  expect(await s.stop()).toBe(0);
  const err = s.stderr();
  const lines = requestLines(err);
  expect(lines).toHaveLength(n);
  const paths = new Set(lines.map((l) => /path=(\S+)/.exec(l)![1]));
  expect(paths.size).toBe(n);
  const lastRequest = err.lastIndexOf("INFO request method=");
  expect(err.indexOf("received SIGTERM")).toBeGreaterThan(lastRequest);
  for (const l of err.trim().split("\n")) expect(l.length).toBeGreaterThan(0);
});

test("a single request on an idle server is logged without waiting for more traffic or a stop", async () => {
  const s = await spawnServer();
  servers.push(s);
  await (await fetch(`${s.url}/api/v1/lonely?x=1`)).text();
  await waitFor(() => s.stderr().includes("path=/api/v1/lonely?x=1"), { what: "the request line" });
  expect(requestLines(s.stderr())).toHaveLength(1);
});
