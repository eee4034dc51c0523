import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { ADMIN_SECRET, createTestApp, type TestApp } from "../helpers/app.ts";
import { buildBinary, runCli, tempDataDir } from "../helpers/cli.ts";
import { spawnServer, type ServerProcess } from "../helpers/server.ts";

// Regex field rules run on a linear-time engine: a hostile pattern or value never costs a busy
// thread or a stalled event loop, and what the engine cannot compile is refused when the rule is set.

setDefaultTimeout(120_000);

const headers = { authorization: `Bearer ${ADMIN_SECRET}`, "content-type": "application/json" };

async function call(s: ServerProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

async function collectionWithPattern(s: ServerProcess, name: string, regex: string) {
  expect((await call(s, "POST", "/admin/collections", { name, rules: { create: "public", read: "public" } })).status).toBe(201);
  expect((await call(s, "PUT", `/admin/collections/${name}/rules`, { field_rules: [{ field: "v", regex }] })).status).toBe(200);
}

const threads = (pid: number) => readdirSync(`/proc/${pid}/task`).length;
/** CPU ticks (user + system) the process has used so far. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]);
}

/** Polls `check` until it is true or `ms` pass; returns whether it became true. */
async function within(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await Bun.sleep(20);
  }
}

describe("a hostile regex rule on a running server", () => {
  let s: ServerProcess;
  beforeAll(async () => {
    s = await spawnServer();
  });
  afterAll(async () => {
    await s.cleanup();
  });

  test("five creates against a*a*a*a*b leave no busy thread behind", async () => {
    await collectionWithPattern(s, "redos", "a*a*a*a*b");
    const pid = s.proc.pid;
    expect((await call(s, "POST", "/redos", { v: "aab" })).status).toBe(201);
    expect((await call(s, "POST", "/redos", { v: "aaa" })).status).toBe(422);
    const idle = threads(pid);
    for (let i = 0; i < 5; i++) {
      const res = await call(s, "POST", "/redos", { v: "a".repeat(3000) });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ errors: [{ field: "v", rule: "regex", message: '"v" must match the pattern a*a*a*a*b.' }] });
    }
    // Back to idle: no extra thread, and the process stops burning CPU (a backtracking match of these
    // values would run for hours: the generous budget is for a busy test machine, not for the engine).
    expect(await within(15_000, () => threads(pid) <= idle)).toBe(true);
    const quiet = await within(15_000, async () => {
      const before = cpuTicks(pid);
      await Bun.sleep(200);
      return cpuTicks(pid) - before <= 4; // at most 20% of one core over 200 ms (100 ticks a second)
    });
    expect(quiet).toBe(true);
  });

  test("/health answers as fast while 40 hostile creates run as while 40 harmless ones do", async () => {
    await collectionWithPattern(s, "mail", "^\\S+@\\S+\\.\\S+$");
    // Slow for a backtracking engine: every '.' is a split point for \S+\.\S+$, and the space defeats $.
    const hostile = `a@${"a.".repeat(4998)} `;
    // As long, and quick for any engine: it matches.
    const harmless = `a@${"a.".repeat(4998)}b`;
    expect(hostile.length).toBeLessThanOrEqual(10_000);
    expect((await call(s, "POST", "/mail", { v: "a@b.c" })).status).toBe(201);
    /** The slowest /health answer while 40 creates of `v` are in flight. */
    const slowestHealth = async (v: string, status: number) => {
      const creates = Array.from({ length: 40 }, () =>
        fetch(`${s.url}/api/v1/mail`, { method: "POST", headers, body: JSON.stringify({ v }) }).then((r) => r.status),
      );
      let settled = false;
      const all = Promise.all(creates).finally(() => (settled = true));
      const times: number[] = [];
      while (!settled || times.length < 3) {
        const started = performance.now();
        const res = await fetch(`${s.url}/health`);
        await res.arrayBuffer();
        times.push(performance.now() - started);
        expect(res.status).toBe(200);
      }
      expect(await all).toEqual(Array(40).fill(status));
      return Math.max(...times);
    };
    // The best of three rounds each, so a scheduling hiccup of a busy test machine is not taken for a
    // blocked event loop; the harmless rounds are the baseline of this machine now (a backtracking engine
    // blocks every hostile round, for seconds).
    const best = async (v: string, status: number) => {
      const rounds: number[] = [];
      for (let i = 0; i < 3; i++) rounds.push(await slowestHealth(v, status));
      return Math.min(...rounds);
    };
    const baseline = await best(harmless, 201);
    expect(await best(hostile, 422)).toBeLessThan(3 * baseline + 50);
  });
});

describe("regex rules in the app", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = createTestApp();
    expect((await t.admin("POST", "/api/v1/admin/collections", { name: "codes", rules: { create: "public" } })).status).toBe(201);
  });
  afterAll(() => t.close());

  const setPattern = (regex: string) => t.admin("PUT", "/api/v1/admin/collections/codes/rules", { field_rules: [{ field: "v", regex }] });

  for (const [what, regex] of [
    ["a backreference", "^(a)\\1$"],
    ["a lookahead", "^(?=a)a$"],
    ["a negative lookbehind", "(?<!x)a"],
    ["a named backreference", "(?<n>a)\\k<n>"],
  ])
    test(`${what} is refused when the rule is set: 400 naming the engine`, async () => {
      const res = await setPattern(regex);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("bad_request");
      expect(res.body.error).toStartWith('field_rules[0]: "regex" does not compile on the RE2 engine (no backreferences or lookaround): ');
    });

  test("a pattern whose RE2 program is too large is refused (worst-case cost grows with the program)", async () => {
    const res = await setPattern("(?:a?){1000}a{1000}");
    expect(res.status).toBe(400);
    expect(res.body.error).toContain("pattern too large: it compiles to");
    expect(res.body.error).toContain("at most 1000");
    expect((await setPattern("^[A-Z]{2,50}$")).status).toBe(200);
    expect((await setPattern("^[a-z]{1,255}$")).status).toBe(200);
    expect((await setPattern("^.{1,200}$")).status).toBe(200);
  });

  test("patterns a backtracking engine chokes on are fine on RE2 and still match correctly", async () => {
    expect((await setPattern("^(a+)+$")).status).toBe(200);
    expect((await t.req("POST", "/api/v1/codes", { body: { v: "aaaa" } })).status).toBe(201);
    // The baseline: a matching value as long (quick for any engine), timed on this machine now.
    let started = performance.now();
    expect((await t.req("POST", "/api/v1/codes", { body: { v: "a".repeat(5001) } })).status).toBe(201);
    const baseline = performance.now() - started;
    started = performance.now();
    const res = await t.req("POST", "/api/v1/codes", { body: { v: `${"a".repeat(5000)}!` } });
    expect(res.status).toBe(422);
    // A backtracking engine takes 2^5000 steps here: not "a few times the baseline".
    expect(performance.now() - started).toBeLessThan(10 * baseline + 200);
  });

  test("a value over 10,000 characters is not matched: 422 rule regex naming the field", async () => {
    expect((await setPattern("^a+$")).status).toBe(200);
    expect((await t.req("POST", "/api/v1/codes", { body: { v: "a".repeat(10_000) } })).status).toBe(201);
    const res = await t.req("POST", "/api/v1/codes", { body: { v: "a".repeat(10_001) } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      errors: [{ field: "v", rule: "regex", message: '"v" is longer than 10000 characters, the most a pattern is checked on.' }],
    });
  });
});

describe("the CLI refuses a pattern RE2 cannot compile", () => {
  let bin: string;
  let dir: string;
  beforeAll(async () => {
    bin = await buildBinary();
    dir = tempDataDir();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("collections rules --field-rules with a lookahead exits 1 with the reason; the rules are unchanged", async () => {
    const cli = (args: string[]) => runCli(bin, ["--data", dir, ...args]);
    expect((await cli(["collections", "create", "codes"])).code).toBe(0);
    const r = await cli(["collections", "rules", "codes", "--field-rules", '[{"field":"v","regex":"^(?=a)a$"}]']);
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith('error: field_rules[0]: "regex" does not compile on the RE2 engine (no backreferences or lookaround): ');
    expect(r.stdout).toBe("");
    const shown = await cli(["collections", "show", "codes", "--json"]);
    expect(shown.json().field_rules).toEqual([]);
  });
});
