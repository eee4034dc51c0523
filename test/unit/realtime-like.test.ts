import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { likeMatcher } from "../../src/realtime/like.ts";

// The in-memory `like` of realtime filter topics must answer what the list's LIKE answers in SQLite.

const sqlite = new Database(":memory:");
const like = sqlite.prepare<{ m: number }, [string, string]>("SELECT ? LIKE ? AS m");
const sqliteLike = (value: string, raw: string) => like.get(value, raw.includes("%") ? raw : `%${raw}%`)!.m === 1;

/** A deterministic pseudo-random generator, so a failure can be run again. */
function random(seed: number) {
  return () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
}

test("like matches as SQLite's LIKE does: `%`, `_`, ASCII case only, code points, no escape", () => {
  const cases: [string, string, boolean][] = [
    ["Hello", "hello", true],
    ["Hello", "h_llo", true],
    ["Hello", "%LL%", true],
    ["Hello", "He", true],
    ["Hello", "He%", true],
    ["Hello", "%lo", true],
    ["Hello", "%lx", false],
    ["ÉCOLE", "école", false],
    ["😀x", "_x", true],
    ["😀x", "__x", false],
    ["a\\b", "a\\b", true],
    ["a\\b", "a\\%", true],
    ["abc", "%", true],
    ["", "%", true],
    ["", "_", false],
    ["aaa", "a%a%a%a", false],
    ["aaaa", "a%a%a%a", true],
    ["x".repeat(40), `${"%x".repeat(16)}%y`, false],
    [`b${"aA".repeat(20)}c`, `%${"a_".repeat(17)}%`, true],
    [`b${"aA".repeat(20)}c`, `%${"a_".repeat(17)}c`, true],
    [`b${"aA".repeat(20)}c`, `%${"A_".repeat(20)}c`, true],
    [`b${"aA".repeat(20)}c`, `%${"a_".repeat(21)}%`, false],
    [`b${"aA".repeat(20)}c`, `%${"_a".repeat(20)}%c`, true],
    [`b${"aA".repeat(20)}c`, `%${"_b".repeat(20)}%`, false],
    [`b${"aA".repeat(16)}xaAc`, `%${"aA".repeat(17)}%`, false],
  ];
  for (const [value, pattern, expected] of cases) {
    expect({ value, pattern, got: likeMatcher(pattern)(value) }).toEqual({ value, pattern, got: expected });
    expect({ value, pattern, sqlite: sqliteLike(value, pattern) }).toEqual({ value, pattern, sqlite: expected });
  }
});

test("like agrees with SQLite on thousands of random patterns and values, segments past 32 characters included", () => {
  const rand = random(42);
  const alphabet = ["a", "A", "b", "B", "é", "😀", "_", "%", "z"];
  const word = (max: number, chars: string[]) => Array.from({ length: Math.floor(rand() * max) }, () => chars[Math.floor(rand() * chars.length)]).join("");
  for (let i = 0; i < 5000; i++) {
    const long = i % 10 === 0;
    const value = long ? word(120, ["a", "A", "a", "A", "a", "A", "a", "A", "😀", "b"]) : word(12, alphabet);
    const pattern = long ? `${word(3, alphabet)}%${"a_".repeat(17)}${word(6, alphabet)}` : word(8, alphabet);
    const expected = sqliteLike(value, pattern);
    if (likeMatcher(pattern)(value) !== expected) expect({ value, pattern, got: likeMatcher(pattern)(value) }).toEqual({ value, pattern, got: expected });
  }
});

test("a pattern of many `%` against a long value is answered in one pass", () => {
  const m = likeMatcher(`${"%a".repeat(2000)}%b`);
  const value = "a".repeat(1_000_000);
  const start = performance.now();
  expect(m(value)).toBe(false);
  expect(m(`${value}b`)).toBe(true);
  // Backtracking would take longer than the universe has; one pass over a megabyte is milliseconds.
  expect(performance.now() - start).toBeLessThan(5_000);
});
