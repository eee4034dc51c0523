import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { FTS_CONFIG, toTsQuery as tsQueryOf, tsvectorExpr } from "../../src/db/pg-fts.ts";
import { migratePostgres } from "../../src/db/migrate-postgres.ts";
import { openPostgres, type PostgresEngine } from "../../src/db/postgres.ts";
import { toMatchQuery as matchQueryOf } from "../../src/db/sqlite-dialect.ts";
import { AppError } from "../../src/errors.ts";
import { tokenize } from "../../src/search/syntax.ts";
import { createTestDatabase, postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";

// The search syntax of the SQLite engine, carried to PostgreSQL's tsquery: the same queries find the same
// records on both engines (where English stemming and stop words play no part), and the same mistakes are 400.

warnIfSkipped();

/** A user's search text as each engine's query text. */
const toTsQuery = (raw: string) => tsQueryOf(tokenize(raw));
const toMatchQuery = (raw: string) => matchQueryOf(tokenize(raw));

describe("search text to tsquery", () => {
  const cases: [string, string, string][] = [
    ["one word", "pasta", "pasta"],
    ["words side by side must all match", "mountain trails", "(mountain & trails)"],
    ["a prefix", "run*", "run:*"],
    ["a quoted phrase", '"mountain trails"', "(mountain <-> trails)"],
    ["a quoted phrase with a prefix", '"mountain tr"*', "(mountain <-> tr:*)"],
    ["OR binds looser than AND", "a b OR c", "((a & b) | c)"],
    ["NOT binds tighter than AND", "a AND b NOT c", "(a & (b & !c))"],
    ["parentheses", "(dog OR cat) walk", "((dog | cat) & walk)"],
    ["punctuation is never syntax: a word with it is a phrase of its parts", "e-mail title:x it's&|!", "(((e <-> mail) & (title <-> x)) & (it <-> s))"],
    ["lower-case operators are words", "cats and dogs", "((cats & and) & dogs)"],
    ["a term without letters or digits drops out", 'pasta "--" OR ""', "pasta"],
    ["nothing but such terms matches nothing", '"--"', ""],
  ];
  for (const [name, input, output] of cases) {
    test(name, () => {
      expect(toTsQuery(input)).toBe(output);
    });
  }

  const bad: [string, string][] = [
    ['"open', "invalid search query: a quote is not closed"],
    ["*", "invalid search query: * must follow a word"],
    ["   ", "invalid search query: it is empty"],
    ["pasta AND", 'invalid search query: syntax error near ""'],
    ["OR pasta", 'invalid search query: syntax error near "OR"'],
    ["(pasta", 'invalid search query: syntax error near ""'],
    ["pasta)", 'invalid search query: syntax error near ")"'],
    ["()", 'invalid search query: syntax error near ")"'],
  ];
  for (const [input, message] of bad) {
    test(`${JSON.stringify(input)} is 400: ${message}`, () => {
      let err: unknown;
      try {
        toTsQuery(input);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AppError);
      expect({ status: (err as AppError).status, body: (err as AppError).body() }).toEqual({ status: 400, body: { error: message, code: "bad_request" } });
    });
  }

  test("the tokenizer's own 400s are word for word those of the SQLite engine", () => {
    for (const input of ['"open', "*", "   "]) {
      const messages = [toTsQuery, toMatchQuery].map((f) => {
        try {
          f(input);
        } catch (e) {
          return (e as Error).message;
        }
      });
      expect(messages[0]).toBe(messages[1]!);
    }
  });
});

const docs: [string, string, string][] = [
  ["d1", "Running shoes", "Light shoes for running on roads"],
  ["d2", "Trail guide", "A guide to mountain trails and running"],
  ["d3", "Cooking pasta", "Boil water, add pasta, e-mail the recipe"],
  ["d4", "Dog walking", "Walk the dog every morning"],
  ["d5", "Cat care", "Cats sleep a lot; walk them rarely"],
];

describe.skipIf(!postgresAvailable)("full text on PostgreSQL against SQLite's FTS5", () => {
  let pg: PostgresEngine;
  const sqlite = new Database(":memory:");

  beforeAll(async () => {
    sqlite.exec("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, body)");
    for (const [id, title, body] of docs) sqlite.query("INSERT INTO docs (id, body) VALUES (?, ?)").run(id, `${title} ${body}`);
    pg = openPostgres({ url: await createTestDatabase(), poolSize: 2 });
    // The text search configuration the column names is the migrations'.
    await migratePostgres(pg);
    await pg.exec(`CREATE TABLE docs (id text PRIMARY KEY, title text, body text,
      _fts tsvector GENERATED ALWAYS AS (${tsvectorExpr(["title", "body"])}) STORED);
      CREATE INDEX docs_fts ON docs USING gin (_fts);`);
    for (const [id, title, body] of docs) await pg.run("INSERT INTO docs (id, title, body) VALUES (?, ?, ?)", [id, title, body]);
  });
  afterAll(async () => {
    sqlite.close();
    await pg?.close();
  });

  const search = async (q: string) =>
    (
      await pg.all<{ id: string }>(
        `SELECT id FROM docs WHERE _fts @@ to_tsquery('${FTS_CONFIG}', ?) ORDER BY ts_rank(_fts, to_tsquery('${FTS_CONFIG}', ?)) DESC, id`,
        [toTsQuery(q), toTsQuery(q)],
      )
    ).map((r) => r.id);

  for (const q of ["guide", "pasta", "run*", "mountain trails", '"mountain trails"', "guide OR pasta", "running NOT mountain", "(dog OR cat) AND walk*", "e-mail", "walk* NOT dog", 'running NOT "mountain trails"', 'pasta "--"', '"trails and"*']) {
    test(`${q} finds the same records on both engines`, async () => {
      const fromSqlite = sqlite
        .query<{ id: string }, [string]>("SELECT id FROM docs WHERE docs MATCH ? ORDER BY id")
        .all(toMatchQuery(q))
        .map((r) => r.id);
      expect(fromSqlite.length).toBeGreaterThan(0);
      expect((await search(q)).sort()).toEqual(fromSqlite);
    });
  }

  test("English stemming: a word finds its other forms", async () => {
    expect(await search("shoe")).toEqual(["d1"]);
    expect((await search("walked")).sort()).toEqual(["d4", "d5"]);
  });

  test("best match first", async () => {
    await pg.run("INSERT INTO docs (id, title, body) VALUES (?, ?, ?), (?, ?, ?)", ["r1", "once", "zebra", "r2", "zebra zebra", "zebra herd of zebra"]);
    expect(await search("zebra")).toEqual(["r2", "r1"]);
  });
});
