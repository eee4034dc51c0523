import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { collectionFromRow } from "../../src/catalog/catalog.ts";
import { storedType, type Collection, type Relation } from "../../src/catalog/types.ts";
import { col, exists, type Bound, type Cond } from "../../src/db/condition.ts";
import type { Engine } from "../../src/db/engine.ts";
import { q } from "../../src/db/ident.ts";
import { openDatabase } from "../../src/db/open.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { SqliteEngine } from "../../src/db/sqlite.ts";
import type { RuleCatalog } from "../../src/rules/expr/check.ts";
import { compileRule, compileRuleForUsers, decideRule, decideRuleForUsers, readsOnlyAuthId, type RuleEnv } from "../../src/rules/expr/compile.ts";
import { checkRuleValue } from "../../src/rules/expr/rule.ts";
import { idsPassing, settleDecisions, uncorrelated, USER_ID, usersFound, usersPassing } from "../../src/rules/expr/settle.ts";
import { createTestDatabase, postgresAvailable, warnIfSkipped } from "../helpers/postgres.ts";

// Expression rules (CONTRACT §12) decided three ways must agree: by SQLite and by PostgreSQL selecting the rows
// of a table with the compiled condition, and in memory over the same records as JavaScript objects (the
// database asked only for relation paths and @exists). Random records hold nulls, numbers, text with case, `%`
// and `_`, booleans and JSON arrays; random rules combine every operator and operand kind. A table of chosen
// rules pins the semantics themselves (nulls, types, missing targets).

warnIfSkipped();

type Row = Record<string, unknown>;

/** A small deterministic generator (mulberry32), so a failure can be replayed: RULE_SEED=<n>. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    chance: (p: number) => next() < p,
  };
}

const SEED = Number(process.env.RULE_SEED ?? 20_240_601);

// ---- The collections, as the catalog holds them

function collection(name: string, fields: [string, string][]): Collection {
  return collectionFromRow({
    name,
    rules: JSON.stringify({ read: "public", create: "public", update: "public", delete: "public" }),
    field_rules: "[]",
    fields: JSON.stringify(fields.map(([n, type]) => ({ name: n, type }))),
    indexes: "[]",
    fts: JSON.stringify({ enabled: false, fields: [] }),
    created_at: 0,
    updated_at: 0,
  });
}

const COLLECTIONS = [
  collection("items", [["s", "text"], ["t", "text"], ["n", "number"], ["m", "number"], ["b", "boolean"], ["j", "json"], ["post", "text"]]),
  collection("posts", [["title", "text"], ["n", "number"], ["author", "text"], ["flags", "json"]]),
  collection("people", [["name", "text"], ["age", "number"], ["boss", "text"]]),
  collection("members", [["item", "text"], ["user", "text"], ["level", "number"]]),
  collection("labels", [["name", "text"]]),
];
const ITEMS = COLLECTIONS[0]!;

const rel = (id: string, from: string, to: string, type: Relation["type"]): Relation => {
  const [from_col, from_field] = from.split(".") as [string, string];
  return { id, from_col, from_field, to_col: to, to_field: null, type, on_delete: "restrict", created_at: 0 };
};
const RELATIONS = [
  rel("rpost", "items.post", "posts", "one"),
  rel("rauth", "posts.author", "people", "one"),
  rel("rboss", "people.boss", "people", "one"),
  rel("rtags", "items.tags", "labels", "many_via"),
];
const JUNCTION = "_rel_rtags";

const catalog: RuleCatalog = {
  collection: (name) => COLLECTIONS.find((c) => c.name.toLowerCase() === name.toLowerCase()),
  relation: (c, f) => RELATIONS.find((r) => r.from_col.toLowerCase() === c.toLowerCase() && r.from_field.toLowerCase() === f.toLowerCase()),
  collections: () => COLLECTIONS,
};

// ---- The records

const TEXTS = ["a", "A", "ab", "aB", "b", "a%b", "a_b", "abc", "", " ", "é", "É", 'x"y', "it's", "\\", "😀", "\ufb00", "z", "Ab_c", "%", "_", "u1", "hello", "HeLLo"];
const NUMBERS = [0, 1, -1, 1.5, 2, 10, -2.5, 1e6, 3];
const JSONS: unknown[] = [[], ["a"], ["a", "b"], [1, 2], [1.5, "a", true], ["A"], { a: 1 }, "a", 5, [null], [["a"]], [false], [true, "u1"], ["u1", "u2"], [2, 2.0]];

const PEOPLE: Row[] = [
  { _id: "p1", name: "Ann", age: 30, boss: "p2" },
  { _id: "p2", name: "bob", age: 40, boss: null },
  { _id: "p3", name: null, age: null, boss: "p9" },
  { _id: "p4", name: "Dan", age: 50, boss: "p1", _deleted_at: 5 },
  { _id: "p5", name: "a%b", age: 1.5, boss: "p4" },
];
const POSTS: Row[] = [
  { _id: "q1", title: "Hello", n: 1, author: "p1", flags: ["x", "a"] },
  { _id: "q2", title: "a%b", n: 2.5, author: "p2", flags: [1, 2] },
  { _id: "q3", title: null, n: null, author: "p3", flags: null },
  { _id: "q4", title: "héllo", n: -1, author: "p4", flags: "a" },
  { _id: "q5", title: "gone", n: 5, author: "p1", flags: ["a"], _deleted_at: 7 },
  { _id: "q6", title: "u1", n: 10, author: "p5", flags: [true] },
];
const MEMBERS: Row[] = [
  { _id: "m1", item: "i01", user: "u1", level: 1 },
  { _id: "m2", item: "i02", user: "u2", level: 2 },
  { _id: "m3", item: "i03", user: "u1", level: 3, _deleted_at: 9 },
  { _id: "m4", item: "i04", user: null, level: 0 },
  { _id: "m5", item: "i05", user: "Ann", level: 10 },
  { _id: "m6", item: "i01", user: "bob", level: -1 },
];
const LABELS: Row[] = [{ _id: "l1", name: "red" }, { _id: "l2", name: "blue" }, { _id: "l3", name: null }];

/** The items: fixed first rows for the table of chosen rules, then random ones. */
function makeItems(): Row[] {
  const r = prng(SEED);
  const items: Row[] = [
    { _id: "i01", _owner_id: "u1", s: "a", t: "A", n: 1, m: 2, b: true, j: ["a", "b"], post: "q1", tags: ["l1", "l2"] },
    { _id: "i02", _owner_id: "u2", s: null, t: "a%b", n: null, m: 1.5, b: false, j: [1, 2.5, false], post: "q4", tags: [] },
    { _id: "i03", _owner_id: null, s: "A", t: null, n: -1, m: null, b: null, j: null, post: "q5", tags: ["l3"] },
    { _id: "i04", _owner_id: "u1", s: "abc", t: "abc", n: 10, m: 10, b: true, j: "a", post: "missing", tags: ["l2"] },
    { _id: "i05", _owner_id: "u2", s: "é", t: "\ufb00", n: 1.5, m: 0, b: false, j: { a: 1 }, post: null, tags: ["l1"] },
  ];
  for (let i = 6; i <= 40; i++) {
    const maybe = <T>(v: () => T, p = 0.2) => (r.chance(p) ? null : v());
    items.push({
      _id: `i${String(i).padStart(2, "0")}`,
      _owner_id: r.pick(["u1", "u2", null, "Ann"]),
      s: maybe(() => r.pick(TEXTS)),
      t: maybe(() => r.pick(TEXTS)),
      n: maybe(() => r.pick(NUMBERS)),
      m: maybe(() => r.pick(NUMBERS)),
      b: maybe(() => r.chance(0.5), 0.3),
      j: maybe(() => r.pick(JSONS), 0.25),
      post: maybe(() => r.pick(["q1", "q2", "q3", "q4", "q5", "q6", "nope"]), 0.25),
      tags: [...new Set([r.pick(["l1", "l2", "l3"]), r.pick(["l1", "l2", "l3", "lx"])])].slice(0, r.int(3)),
    });
  }
  items.forEach((it, i) => Object.assign(it, { _created_at: 1000 + i * 10, _updated_at: 1000 + i * 10 }));
  return items;
}
const ITEM_ROWS = makeItems();

/** A value as its column stores it. */
function stored(col: Collection, name: string, v: unknown): Bound {
  if (v === null || v === undefined) return null;
  const type = col.fieldMap.get(name.toLowerCase())?.type;
  if (type === "boolean") return v ? 1 : 0;
  if (type === "json") return JSON.stringify(v);
  return v as Bound;
}

async function fill(db: Engine): Promise<void> {
  const data: [Collection, Row[]][] = [
    [COLLECTIONS[0]!, ITEM_ROWS],
    [COLLECTIONS[1]!, POSTS],
    [COLLECTIONS[2]!, PEOPLE],
    [COLLECTIONS[3]!, MEMBERS],
    [COLLECTIONS[4]!, LABELS],
  ];
  for (const [col, rows] of data) {
    for (const sql of db.sql.ddl.createTable(col.name)) await db.exec(sql);
    for (const f of col.fields) await db.exec(db.sql.ddl.addColumn(col.name, f.name, storedType(f.type)));
    const names = ["_id", "_created_at", "_updated_at", "_owner_id", "_deleted_at", ...col.fields.map((f) => f.name)];
    for (const row of rows) {
      const values = names.map((n) => (n.startsWith("_") ? ((row[n] ?? (n.endsWith("_at") && n !== "_deleted_at" ? 1 : null)) as Bound) : stored(col, n, row[n])));
      await db.run(`INSERT INTO ${q(col.name)} (${names.map(q).join(", ")}) VALUES (${names.map(() => "?").join(", ")})`, values);
    }
  }
  for (const sql of db.sql.ddl.createJunction(JUNCTION)) await db.exec(sql);
  for (const it of ITEM_ROWS) {
    let pos = 0;
    for (const to of it.tags as string[]) await db.run(`INSERT INTO ${q(JUNCTION)} ("from_id", "to_id", "pos") VALUES (?, ?, ?)`, [it._id as string, to, pos++]);
  }
}

// ---- Who asks

const ENVS: Record<string, RuleEnv> = {
  anonymous: { auth: null, now: 1100 },
  u1: {
    auth: { id: "u1", email: "a", verified: true, roles: ["editor", "a", "u1"], metadata: { plan: "pro", n: 1, list: ["a", 1, true], flag: true, nested: { k: "a" }, constructor: "x" } },
    now: 1150,
    body: { s: "a", n: 1, j: ["a", 2], b: true, nul: null },
  },
  u2: { auth: { id: "u2", email: "A", verified: false, roles: [], metadata: {} }, now: 1e6, body: {} },
  editor: { auth: { id: "Ann", email: "é", verified: true, roles: ["editor"], metadata: { plan: 5, list: "a" } }, now: 0, body: { s: 1, j: "a", b: "true" } },
};

// ---- Random rules

/** Writes a text literal, quoted either way, escaping what must be. */
function literal(r: ReturnType<typeof prng>, s: string): string {
  const quote = r.chance(0.5) ? "'" : '"';
  return quote + s.replace(/\\/g, "\\\\").replace(new RegExp(quote, "g"), `\\${quote}`) + quote;
}

const PATTERNS = ["a", "A%", "%b", "a_b", "%", "_", "é", "É", "hel", "a%b", "", "L%O", "%_%", "u", "b_", "%é"];

function ruleGenerator(r: ReturnType<typeof prng>) {
  const text = () => literal(r, r.pick(TEXTS));
  const num = () => String(r.pick([...NUMBERS, 1000, 1100, 1200, 2.5, -0.5]));
  let existsLeft = 0;

  // Operands by type: outside @exists (the item) and inside one over members.
  const outer = {
    text: ["s", "t", "_id", "_owner_id", "post", "post.title", "post.author", "post.author.name", "post.author.boss.name"],
    number: ["n", "m", "_created_at", "_updated_at", "post.n", "post.author.age", "post.author.boss.age"],
    boolean: ["b"],
    list: ["j", "post.flags", "tags"],
  };
  const inner = {
    text: ["item", "user", "_id", "@record.s", "@record._id", "@record._owner_id", "@record.post.title"],
    number: ["level", "@record.n", "@record.m"],
    boolean: ["@record.b"],
    list: ["@record.j", "@record.tags"],
  };
  const known = {
    text: () => r.pick([text(), text(), "@auth.id", "@auth.email", "@auth.metadata.plan", "@request.body.s", "@auth.metadata.nested.k", "@auth.metadata.constructor"]),
    number: () => r.pick([num(), num(), "@now", "@auth.metadata.n", "@request.body.n", "@auth.metadata.plan"]),
    boolean: () => r.pick(["true", "false", "@auth.verified", "@auth.metadata.flag", "@request.body.b", "@request.body.s:isset", "@request.body.zz:isset"]),
    list: () => r.pick(["@auth.roles", "@auth.metadata.list", "@request.body.j", "@request.body.nul"]),
  };
  let scope = outer;

  const operand = (type: "text" | "number" | "boolean" | "list") => (r.chance(0.6) && scope[type].length ? r.pick(scope[type]) : known[type]());

  const comparison = (): string => {
    const kind = r.int(10);
    if (kind <= 2) {
      const type = r.pick(["text", "number", "boolean"] as const);
      return `${operand(type)} ${r.pick(["=", "!="])} ${operand(type)}`;
    }
    if (kind === 3) {
      const type = r.pick(["text", "number", "boolean", "list"] as const);
      const a = r.chance(0.8) && type !== "list" ? operand(type) : r.pick(scope.list.filter((x) => !x.endsWith("tags")).concat(["@auth.roles", "@auth.metadata.list"]));
      return r.chance(0.5) ? `${a} ${r.pick(["=", "!="])} null` : `null ${r.pick(["=", "!="])} ${a}`;
    }
    if (kind === 4) {
      const type = r.pick(["text", "number"] as const);
      return `${operand(type)} ${r.pick([">", ">=", "<", "<="])} ${operand(type)}`;
    }
    if (kind === 5) {
      const pattern = r.pick([literal(r, r.pick(PATTERNS)), literal(r, r.pick(PATTERNS)), "@auth.email", "@request.body.s", "@auth.metadata.plan"]);
      return `${operand("text")} ${r.pick(["~", "!~"])} ${pattern}`;
    }
    if (kind <= 7) {
      const list = operand("list");
      const ids = list.endsWith("tags") || list === "@auth.roles";
      const type = ids ? "text" : r.pick(["text", "number", "boolean"] as const);
      const value = ids && r.chance(0.5) ? literal(r, r.pick(["l1", "l2", "lx", "editor", "a", "u1"])) : operand(type);
      return `${list} ${r.pick(["?=", "?!="])} ${value}`;
    }
    if (kind === 8) return r.pick([...scope.boolean, "@auth.verified", "@request.body.s:isset", "@auth.metadata.flag", "true", "false"]);
    if (existsLeft > 0 && scope === outer) {
      existsLeft--;
      scope = inner;
      const where = tree(2);
      scope = outer;
      return `@exists(members, ${where})`;
    }
    if (existsLeft > 0) {
      existsLeft--;
      const where = r.pick(["name = @record.user", "age > @record.level", "name ~ @auth.email", "_id = @record.user || boss = null"]);
      return `@exists(people, ${where})`;
    }
    return `${operand("text")} = ${operand("text")}`;
  };

  const tree = (depth: number): string => {
    if (depth === 0 || r.chance(0.4)) return comparison();
    const k = r.int(5);
    if (k === 0) return `!(${tree(depth - 1)})`;
    const parts = Array.from({ length: 2 + r.int(2) }, () => tree(depth - 1));
    return `(${parts.join(k <= 2 ? " && " : " || ")})`;
  };

  return () => {
    existsLeft = r.int(3);
    return tree(3);
  };
}

// ---- Deciding

/** The ids the database selects for `cond`. */
async function selected(db: Engine, cond: Cond): Promise<string[]> {
  const params: Bound[] = [];
  const where = db.sql.cond(cond, params);
  return (await db.all<{ _id: string }>(`SELECT "_id" FROM "items" WHERE ${where} ORDER BY "_id"`, params)).map((x) => x._id);
}

/** The ids whose record passes in memory (the database asked for what only it can tell). */
async function decidedInMemory(db: Engine, rule: ReturnType<typeof checkRuleValue>, env: RuleEnv, dropLinks: boolean): Promise<string[]> {
  const records = ITEM_ROWS.map((it) => {
    const copy = { ...it };
    // A record without its many_via field asks the junction table.
    if (dropLinks) delete copy.tags;
    return copy;
  });
  const decisions = records.map((rec) => decideRule(rule, rec, env));
  const passed = await settleDecisions(db, decisions);
  return records.filter((_, i) => passed[i]).map((x) => x._id as string).sort();
}

/** Chosen rules and the items they let through, asked as u1 unless said (pins the semantics themselves). */
const CHOSEN: [string, string[], string?][] = [
  // A literal that tries to end its quotes is a value like any other (the rules after it still find the table).
  ["s = 'x\\'); DROP TABLE items; --' || s = \"a\\\" OR 1=1 --\" || s = 'a'", ["i01"]],
  ["s = null", ["i02"]],
  ["s != null", ["i01", "i03", "i04", "i05"]],
  ["s != 'a'", ["i02", "i03", "i04", "i05"]],
  ["!(s = 'a')", ["i02", "i03", "i04", "i05"]],
  ["s > 'a'", ["i04", "i05"]],
  ["!(s > 'a')", ["i01", "i02", "i03"]],
  ["s ~ 'A'", ["i01", "i03", "i04"]],
  ["s !~ 'b'", ["i01", "i02", "i03", "i05"]],
  ["s ~ 'É'", []],
  ["t ~ 'a%b'", ["i02"]],
  ["t ~ 'a_b'", ["i02"]],
  ["n >= 1.5", ["i04", "i05"]],
  ["n = @auth.metadata.plan", []],
  ["n != @auth.metadata.plan", ["i01", "i02", "i03", "i04", "i05"]],
  ["b", ["i01", "i04"]],
  ["!b", ["i02", "i03", "i05"]],
  ["b = false", ["i02", "i05"]],
  ["j ?= 'a'", ["i01"]],
  ["j ?= 1", ["i02"]],
  ["j ?= 2.5", ["i02"]],
  ["j ?= false", ["i02"]],
  ["j ?= 0", []],
  ["j ?!= 1", ["i01", "i02"]],
  ["t < '😀'", ["i01", "i02", "i04", "i05"]],
  ["t > 'ab'", ["i04", "i05"]],
  ["j ?!= 'a'", ["i01", "i02"]],
  ["j = null", ["i03"]],
  ["tags ?= 'l2'", ["i01", "i04"]],
  ["tags ?!= 'l1'", ["i01", "i03", "i04"]],
  ["@auth.roles ?= s", ["i01"]],
  ["@auth.roles ?!= s", ["i01", "i02", "i03", "i04", "i05"]],
  ["_owner_id = @auth.id", ["i01", "i04"]],
  ["_owner_id = @auth.id", [], "anonymous"],
  ["_owner_id != @auth.id", ["i01", "i02", "i03", "i04", "i05"], "anonymous"],
  ["_owner_id = null", ["i03"], "anonymous"],
  ["@auth.id = null", ["i01", "i02", "i03", "i04", "i05"], "anonymous"],
  ["post.title = 'Hello'", ["i01"]],
  ["post.title = null", ["i03", "i04", "i05"]],
  ["post.title != null", ["i01", "i02"]],
  ["post.author.name = null", ["i02", "i03", "i04", "i05"]],
  ["post.author.boss.name = 'bob'", ["i01"]],
  ["post.author.name != 'Ann'", ["i02", "i03", "i04", "i05"]],
  ["@auth.roles ?!= post.title", ["i01", "i02", "i03", "i04", "i05"]],
  ["@exists(members, item = @record._id && user = @auth.id)", ["i01"]],
  ["!@exists(members, item = @record._id)", ["i03"]],
  ["@exists(members, item = @record._id && @exists(people, name = @record.user))", ["i01", "i05"]],
  ["_created_at < @now", ["i01", "i02", "i03", "i04", "i05"]],
  ["_created_at > 1010.5", ["i03", "i04", "i05"]],
  ["@request.body.s:isset && @request.body.s = s", ["i01"]],
  ["@request.body.nul = null && @request.body.zz = null", ["i01", "i02", "i03", "i04", "i05"]],
  ["@auth.metadata.constructor = 'x' && @auth.metadata.toString = null", ["i01", "i02", "i03", "i04", "i05"]],
];

const engines: { name: string; available: boolean; open: () => Promise<Engine> }[] = [
  { name: "sqlite", available: true, open: async () => new SqliteEngine(openDatabase(":memory:")) },
  { name: "postgres", available: postgresAvailable, open: async () => openPostgres({ url: await createTestDatabase(), poolSize: 2 }) },
];

for (const engine of engines) {
  describe.skipIf(!engine.available)(`expression rules on ${engine.name}`, () => {
    let db: Engine;
    beforeAll(async () => {
      db = await engine.open();
      await fill(db);
    }, 60_000);
    afterAll(async () => {
      await db?.close();
    });

    test("chosen rules let through the records their meaning says: in SQL, in memory, and asked by id", async () => {
      const wrong: string[] = [];
      const first = new Set(["i01", "i02", "i03", "i04", "i05"]);
      for (const [text, want, who] of CHOSEN) {
        const env = ENVS[who ?? "u1"]!;
        const rule = checkRuleValue(catalog, ITEMS, "update", text);
        const sql = (await selected(db, compileRule(rule, env))).filter((id) => first.has(id));
        const memory = (await decidedInMemory(db, rule, env, false)).filter((id) => first.has(id));
        const byId = [...(await idsPassing(db, rule, env, [...first]))].sort();
        if ([sql, memory, byId].some((got) => JSON.stringify(got) !== JSON.stringify(want)))
          wrong.push(`${text} as ${who ?? "u1"}: want ${want.join(",")}; SQL ${sql.join(",")}; memory ${memory.join(",")}; by id ${byId.join(",")}`);
      }
      expect(wrong).toEqual([]);
    });

    test("random rules: the database selects exactly the records that pass in memory, and the negation the rest", async () => {
      const r = prng(SEED + 1);
      const next = ruleGenerator(r);
      const all = ITEM_ROWS.map((x) => x._id as string).sort();
      const wrong: string[] = [];
      let checked = 0;
      let refused = 0;
      const refusals: string[] = [];
      for (let i = 0; i < 120; i++) {
        const text = next();
        let rule;
        try {
          rule = checkRuleValue(catalog, ITEMS, "update", text);
        } catch (err) {
          refused++;
          if (refusals.length < 5) refusals.push(`${text}: ${(err as Error).message}`);
          continue;
        }
        for (const [who, env] of Object.entries(ENVS)) {
          checked++;
          const sql = await selected(db, compileRule(rule, env));
          const memory = await decidedInMemory(db, rule, env, i % 2 === 1);
          const negated = await selected(db, compileRule(rule, env, { negate: true }));
          const rest = all.filter((id) => !sql.includes(id));
          if (JSON.stringify(sql) !== JSON.stringify(memory)) wrong.push(`${text} as ${who}: SQL ${sql.join(",")} / memory ${memory.join(",")}`);
          if (JSON.stringify(negated) !== JSON.stringify(rest)) wrong.push(`NOT ${text} as ${who}: ${negated.join(",")} / rest ${rest.join(",")}`);
        }
      }
      expect(wrong.slice(0, 10)).toEqual([]);
      // The generator writes rules the checker takes; a refusal means one of them is out of step.
      expect(refusals).toEqual([]);
      expect(refused).toBe(0);
      expect(checked).toBe(480);
    }, 120_000);

    test("a rule that reads only @auth.id, asked for many users in one statement, lets through the users it lets through one by one", async () => {
      const r = prng(SEED + 2);
      const next = ruleGenerator(r);
      // Shapes a room's rule takes: membership, an owner, and parts that hold for all users alike.
      const shapes = [
        "@exists(members, item = @record._id && user = @auth.id) || _owner_id = @auth.id",
        "@exists(members, item = @record._id) && _owner_id = @auth.id",
        "@exists(members, item = @record._id && level > 1 && user = @auth.id) && @exists(people, name = 'Ann')",
        "(@exists(members, item = @record._id && user = @auth.id) && !@exists(people, age > 200)) || s = 'a'",
        "@exists(members, user = @auth.id && item = @record._id) || @exists(members, level = 2 && user = @auth.id)",
      ];
      const texts = [...CHOSEN.map(([text]) => text), ...shapes, ...Array.from({ length: 120 }, next)];
      // The users as a realtime event asks about them: the same time, no request body.
      const now = 1150;
      const users = ["u1", "u2", "editor"].map((who) => ({ auth: ENVS[who]!.auth, now, body: null }) as RuleEnv);
      const ids = users.map((e) => e.auth!.id);
      const wrong: string[] = [];
      let asked = 0;
      let bySet = 0;
      for (const text of texts) {
        const rule = checkRuleValue(catalog, ITEMS, "update", text);
        if (!readsOnlyAuthId(rule)) continue;
        for (const rec of ITEM_ROWS) {
          asked++;
          const one = await settleDecisions(db, users.map((env) => decideRule(rule, rec, env)));
          const want = ids.filter((_, i) => one[i]).sort();
          const d = decideRuleForUsers(rule, rec, now, USER_ID);
          const inMemory = d === true ? [...ids].sort() : d === false ? [] : [...(await usersPassing(db, d, new Set(ids)))].sort();
          // The stored row asked by its id, as for an event held by reference.
          const stored = exists("items", "pg_s0", { k: "and", of: [{ k: "cmp", op: "=", a: col("pg_s0", "_id", "text"), b: { k: "val", v: rec._id as string } }, compileRuleForUsers(rule, now, USER_ID, { table: "pg_s0" })] });
          const byRow = [...(await usersPassing(db, stored, new Set(ids)))].sort();
          if (JSON.stringify(inMemory) !== JSON.stringify(want) || JSON.stringify(byRow) !== JSON.stringify(want))
            wrong.push(`${text} on ${rec._id}: one by one ${want.join(",")}; at once ${inMemory.join(",")}; stored ${byRow.join(",")}`);
          // The users found without their list (a room's members, an owner), where the rule is of that shape.
          const found = typeof d === "object" ? await usersFound(db, uncorrelated(d), ids.length) : null;
          if (found) {
            bySet++;
            const passing = ids.filter((id) => found.has(id)).sort();
            if (JSON.stringify(passing) !== JSON.stringify(want)) wrong.push(`${text} on ${rec._id}: one by one ${want.join(",")}; found ${passing.join(",")}`);
          }
        }
      }
      expect(wrong.slice(0, 10)).toEqual([]);
      // Both ways of asking for all users at once are compared above.
      expect(bySet).toBeGreaterThan(20);
      expect(asked - bySet).toBeGreaterThan(20);
      // Most rules read nothing of the caller or only the id: the test asks about many of them.
      expect(asked).toBeGreaterThan(300);
    }, 120_000);
  });
}
