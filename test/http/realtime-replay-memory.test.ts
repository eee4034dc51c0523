import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { ADMIN_SECRET } from "../helpers/app.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";
import { SseClient } from "../helpers/sse.ts";

// The replay buffer is bounded in bytes (CONTRACT §8c): large records written while a stream is open are
// not all held for five minutes. Measured on a real server process, whose memory is its own. The buffer
// is the same on both engines: the server runs on SQLite whatever engine the suite tests (on PostgreSQL
// each 15 MB write takes over a second, and the relay between nodes adds its own copy of every record).

let server: ServerProcess;
beforeAll(async () => {
  server = await spawnServer({ env: { DATABASE_URL: "" } });
}, 60_000);
afterAll(() => server?.cleanup());

/** The resident memory of the server process, in MiB. */
const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.proc.pid}/status`, "utf8"))![1]) / 1024;

const api = (method: string, path: string, body?: string) =>
  fetch(`${server.url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" }, body });

test("60 writes of 15 MB with a stream open: each goes out whole, and the server holds none of them (its memory falls back under 300 MiB between writes)", async () => {
  expect((await api("POST", "/admin/collections", JSON.stringify({ name: "big" }))).status).toBe(201);
  const stream = await SseClient.open(`${server.url}/api/v1/realtime?subscribe=big`);
  await stream.clientId();
  const body = JSON.stringify({ title: "x".repeat(15_000_000) });
  const rss: number[] = [];
  for (let i = 0; i < 60; i++) {
    const res = await api("POST", "/big", body);
    expect(res.status).toBe(201);
    await res.arrayBuffer();
    // The stream takes each before the next write (a reader this far behind on records of 15 MB is reset).
    await stream.waitChanges(i + 1, 30_000);
    rss.push(Math.round(rssMiB()));
  }
  // Each write leaves garbage (the body, its parsing, the answer) that is collected as the next ones come;
  // what is still there at the lowest of the last twenty is what the server holds. Were the records held
  // for resumes, that would be 15 MB more after every write.
  const held = Math.min(...rss.slice(-20));
  if (held >= 300) console.error("resident MiB after each write:", rss.join(" "));
  expect(held).toBeLessThan(300);
  // Each went out whole to the stream (which reads as fast as it can), and the stream is still open.
  await stream.waitChanges(60, 30_000);
  expect(stream.changes().map((e) => e.data.record.title?.length)).toEqual(Array(60).fill(15_000_000));
  expect(stream.ended).toBe(false);
  stream.close();
}, 180_000);
