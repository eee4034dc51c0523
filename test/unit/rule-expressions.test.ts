import { describe, expect, test } from "bun:test";
import { collectionFromRow } from "../../src/catalog/catalog.ts";
import type { Collection, Operation, Relation, Rules } from "../../src/catalog/types.ts";
import type { Bound } from "../../src/db/condition.ts";
import { postgresDialect } from "../../src/db/postgres-dialect.ts";
import { sqliteDialect } from "../../src/db/sqlite-dialect.ts";
import { RuleError } from "../../src/rules/expr/ast.ts";
import type { RuleCatalog } from "../../src/rules/expr/check.ts";
import { compileRule, type RuleEnv } from "../../src/rules/expr/compile.ts";
import { rulesNamingField } from "../../src/rules/expr/names.ts";
import { parseExpression } from "../../src/rules/expr/parser.ts";
import { checkRuleValue, fixedRule, ruleFor } from "../../src/rules/expr/rule.ts";
import { likeMatch } from "../../src/rules/expr/values.ts";

// The expression language of CONTRACT §12 without a database: what parses, what the checker refuses and how
// its messages name the token and its 1-based position, the limits, and that the fixed rule words compile to
// the same conditions as their expressions.

const ALL_PUBLIC: Rules = { read: "public", create: "public", update: "public", delete: "public" };

function collection(name: string, fields: [string, string][], rules: Partial<Rules> = {}): Collection {
  return collectionFromRow({
    name,
    rules: JSON.stringify({ ...ALL_PUBLIC, ...rules }),
    field_rules: "[]",
    fields: JSON.stringify(fields.map(([n, type]) => ({ name: n, type }))),
    indexes: "[]",
    fts: JSON.stringify({ enabled: false, fields: [] }),
    created_at: 0,
    updated_at: 0,
  });
}

const rel = (id: string, from: string, to: string, type: Relation["type"]): Relation => {
  const [from_col, from_field] = from.split(".") as [string, string];
  return { id, from_col, from_field, to_col: to, to_field: null, type, on_delete: "restrict", created_at: 0 };
};

function catalogOf(cols: Collection[], rels: Relation[]): RuleCatalog {
  return {
    collection: (name) => cols.find((c) => c.name.toLowerCase() === name.toLowerCase()),
    relation: (c, f) => rels.find((r) => r.from_col.toLowerCase() === c.toLowerCase() && r.from_field.toLowerCase() === f.toLowerCase()),
    collections: () => cols,
  };
}

const POSTS = collection("posts", [["title", "text"], ["status", "text"], ["views", "number"], ["published", "boolean"], ["tags", "json"], ["room", "text"], ["author", "text"]]);
const ROOMS = collection("rooms", [["name", "text"], ["owner", "text"], ["parent", "text"]]);
const USERS = collection("users", [["email", "text"]]);
const MEMBERS = collection("members", [["room", "text"], ["user", "text"]]);
const RELATIONS = [
  rel("r1", "posts.room", "rooms", "one"),
  rel("r2", "rooms.owner", "users", "one"),
  rel("r3", "rooms.parent", "rooms", "one"),
  rel("r4", "posts.labels", "users", "many_via"),
  rel("r5", "rooms.posts", "posts", "many"),
  rel("r6", "posts.author", "users", "one"),
];
const CATALOG = catalogOf([POSTS, ROOMS, USERS, MEMBERS], RELATIONS);

/** The message a rule gets, or "ok". */
function verdict(text: string, op: Operation = "read"): string {
  try {
    checkRuleValue(CATALOG, POSTS, op, text);
    return "ok";
  } catch (err) {
    if (err instanceof RuleError) return `${err.message} [${err.position}]`;
    throw err;
  }
}

describe("parsing", () => {
  const cases: [string, string][] = [
    ["status = 'published' && (views > 10 || title ~ \"x\"))", "unexpected ')' at 52: no '(' opens it [52]"],
    ["(status = 'a'", "unexpected end of expression at 14: expected ')' [14]"],
    ["status == 'a'", "unknown operator '==' at 8 [8]"],
    ["status <> 'a'", "unknown operator '<>' at 8 [8]"],
    ["status !== 'a'", "unknown operator '!==' at 8 [8]"],
    ["status = 'a' status = 'b'", "unexpected 'status' at 14: expected || or && between terms [14]"],
    ["status = 'a", "unterminated text starting at 10 [10]"],
    ["status = 'a\\nb'", "unknown escape '\\n' at 12: write \\\\, \\' or \\\" (no other escapes) [12]"],
    ["status # 'a'", "unexpected character '#' at 8 [8]"],
    ["status = 'a' & views = 1", "unknown operator '&' at 14 [14]"],
    ["views = 1e999", "number '1e999' at 9 is out of range [9]"],
    ["views = 1.", "unexpected '1.' at 9: not a number [9]"],
    ["views = 12abc", "unexpected '12a' at 9: not a number [9]"],
    ["room. = 1", "unexpected '.' at 5: a name must follow it in 'room.' [5]"],
    ["@ = 1", "unexpected '@' at 1: a name must follow it [1]"],
    ["@request.body.x:is = 1", "unexpected ':' at 16: only ':isset' may follow a name [16]"],
    ["@exists = true", "unexpected '=' at 9: expected '(' after @exists [9]"],
    ["@exists(members, true) = false", "unexpected '=' at 24: expected || or && between terms [24]"],
    ["@exists(posts.x, true)", "unexpected 'posts.x' at 9: expected a collection name [9]"],
    ["@exists(members true)", "unexpected 'true' at 17: expected ',' after the collection name [17]"],
    ["", "empty expression [1]"],
    ["   ", "empty expression [1]"],
    ["a = 'x\u0000'", "a NUL character in text at 7 [7]"],
    ["views = 1 ?", "unknown operator '?' at 11 [11]"],
  ];
  for (const [text, message] of cases) {
    test(`${JSON.stringify(text)}: ${message}`, () => {
      expect(verdict(text)).toBe(message);
    });
  }

  test("literals: either quote, the three escapes, numbers with sign, fraction and exponent", () => {
    const node = parseExpression(`title = 'it\\'s' || title = "say \\"hi\\"" || title = 'a\\\\b' || views = -1.5e2 || views = .5 || views = -0`);
    const values = JSON.stringify(node).match(/"v":[^,}]+/g);
    expect(values).toEqual(['"v":"it\'s"', '"v":"say \\"hi\\""', '"v":"a\\\\b"', '"v":-150', '"v":0.5', '"v":0']);
  });

  test("a known operator followed by `!` is two tokens", () => {
    expect(verdict("status = 'a' && !!(views > 1) ||!(views >= 2)")).toBe("ok");
  });

  test("keywords are lower case; other spellings are field names", () => {
    expect(verdict("published = TRUE")).toBe("unknown field 'TRUE' at 13 [13]");
    expect(verdict("published = true && title != null")).toBe("ok");
  });
});

describe("limits", () => {
  test("a text over 2,000 characters is refused before it is read, however it is nested", () => {
    expect(verdict(`title = '${"x".repeat(1990)}'`)).toBe("ok");
    expect(verdict(`title = '${"x".repeat(1991)}'`)).toBe("longer than 2000 characters (2001) [2001]");
    // 100,000 opening parentheses: refused by length, with no recursion.
    expect(verdict("(".repeat(100_000))).toBe("longer than 2000 characters (100000) [2001]");
    expect(verdict("!".repeat(100_000) + "published")).toBe("longer than 2000 characters (100009) [2001]");
  });

  test("nesting past 32 levels is refused at the token that goes too deep", () => {
    const ok = `${"(".repeat(32)}published${")".repeat(32)}`;
    expect(verdict(ok)).toBe("ok");
    expect(verdict(`${"(".repeat(33)}published${")".repeat(33)}`)).toBe("nested deeper than 32 at 33 ('(') [33]");
    expect(verdict(`${"(".repeat(1990)}`)).toBe("nested deeper than 32 at 33 ('(') [33]");
    expect(verdict(`${"!".repeat(33)}published`)).toBe("nested deeper than 32 at 33 ('!') [33]");
  });

  test("at most 100 comparisons", () => {
    const terms = (n: number) => Array.from({ length: n }, () => "published").join(" || ");
    expect(verdict(terms(100))).toBe("ok");
    expect(verdict(terms(101))).toBe("more than 100 comparisons (at 1301) [1301]");
  });

  test("at most 3 @exists, nested at most 2 deep", () => {
    const one = "@exists(members, user = @auth.id)";
    expect(verdict([one, one, one].join(" || "))).toBe("ok");
    expect(verdict([one, one, one, one].join(" || "))).toBe("more than 3 @exists at 112 [112]");
    expect(verdict("@exists(members, room = @record.room && @exists(rooms, _id = @record.room))")).toBe("ok");
    expect(verdict("@exists(members, @exists(rooms, @exists(users, true)))")).toBe("@exists nested more than 2 deep at 33 [33]");
  });

  test("a relation path goes through at most 3 relations", () => {
    expect(verdict("room.parent.parent.name = 'x'")).toBe("ok");
    expect(verdict("room.parent.parent.owner.email = 'x'")).toBe("'room.parent.parent.owner.email' at 1 goes through more than 3 relations [1]");
  });
});

describe("checking against the catalog", () => {
  const cases: [string, Operation, string][] = [
    ["titel = 'x'", "read", "unknown field 'titel' at 1 [1]"],
    ["Title = 'x' && STATUS != null && _ID != null", "read", "ok"],
    ["_deleted_at = null", "read", "unknown field '_deleted_at' at 1 [1]"],
    ["room.nme = 'x'", "read", "unknown field 'nme' in 'room.nme' at 6 (collection 'rooms') [6]"],
    ["title.owner = 'x'", "read", "'title' in 'title.owner' at 1 is not a relation of 'posts' [1]"],
    ["rom.owner = 'x'", "read", "'rom' in 'rom.owner' at 1 is not a field of 'posts' [1]"],
    ["labels.email = 'x'", "read", "'labels' in 'labels.email' at 1 is a many_via relation: a path goes only through one relations [1]"],
    ["room.posts ?= 'x'", "read", "'posts' in 'room.posts' at 6 is a many relation: a rule cannot look at it (use @exists) [6]"],
    ["room.owner.email = @auth.email", "read", "ok"],
    ["labels ?= @auth.id", "read", "ok"],
    ["labels = null", "read", "'=' at 8: 'labels' (many_via field) holds links: test them with ?= or ?!= [8]"],
    ["@exists(memberz, true)", "read", "unknown collection 'memberz' at 9 [9]"],
    ["@exists(members, room = @record.room && user = @auth.id)", "read", "ok"],
    ["@exists(members, title = 'x')", "read", "unknown field 'title' at 18 [18]"],
    ["@exists(members, @record.titel = 'x')", "read", "unknown field 'titel' at 26 [26]"],
    ["@record.title = 'x'", "read", "'@record.title' at 1: @record is known only inside @exists [1]"],
    ["@request.body.title = 'x'", "read", "'@request.body.title' at 1: @request.body is known only in create and update rules, not in a read rule [1]"],
    ["@request.body.title:isset", "delete", "'@request.body.title:isset' at 1: @request.body is known only in create and update rules, not in a delete rule [1]"],
    ["@request.body.title = 'x' && !@request.body.owner:isset", "create", "ok"],
    ["@request.body.title = 'x'", "update", "ok"],
    ["@request.body = 'x'", "update", "'@request.body' at 1: name one field: @request.body.<field> [1]"],
    ["@request.query.x = 'x'", "read", "unknown name '@request.query.x' at 1 [1]"],
    ["@auth.password = 'x'", "read", "unknown name '@auth.password' at 1 [1]"],
    ["@collection.posts = 1", "read", "unknown name '@collection.posts' at 1 [1]"],
    ["@auth.id:isset", "read", "'@auth.id:isset' at 1: only @request.body.<field> takes :isset [1]"],
    ["@auth.metadata = 'x'", "read", "'@auth.metadata' at 1: name a key: @auth.metadata.<key> [1]"],
    ["@auth.metadata.a.b.c.d = 'x'", "read", "'@auth.metadata.a.b.c.d' at 1: at most 3 keys deep [1]"],
    ["@auth.metadata.plan = 'pro' && @auth.metadata.2fa = true", "read", "ok"],
    ["title = 5", "read", "'=' at 7: cannot compare 'title' (text) with '5' (number) [7]"],
    ["views > 'a'", "read", "'>' at 7: cannot compare 'views' (number) with ''a'' (text) [7]"],
    ["published > false", "read", "'>' at 11: 'published' (boolean) has no order: compare texts or numbers [11]"],
    ["views > null", "read", "'>' at 7: cannot order null: use = null or != null [7]"],
    ["tags = 'a'", "read", "'=' at 6: 'tags' (json) compares only with null; test its elements with ?= or ?!= [6]"],
    ["tags = null && tags ?= 'a' && tags ?!= 1 && tags ?= true", "read", "ok"],
    ["title ?= 'a'", "read", "'?=' at 7: 'title' (text) is not a list: put a json field, a many_via field, @auth.roles or an @ value on the left [7]"],
    ["tags ?= null", "read", "'?=' at 6: no element equals null: ?= takes a text, a number or a boolean [6]"],
    ["@auth.roles ?= views", "read", "'?=' at 13: '@auth.roles' (list of roles) holds texts: cannot look for 'views' (number) [13]"],
    ["@auth.roles = 'x'", "read", "'=' at 13: '@auth.roles' (list of roles) is a list: test its elements with ?= or ?!= [13]"],
    ["title ~ status", "read", "'~' at 7: the text to look for, 'status', must be a literal or an @ value, not a field [7]"],
    ["views ~ '1'", "read", "'~' at 7: 'views' (number) is not text: ~ looks for a text in a text [7]"],
    ["title ~ 1", "read", "'~' at 7: '1' (number) is not text [7]"],
    ["title", "read", "expected a comparison after 'title' at 1: it is not a boolean [1]"],
    ["published && @auth.verified && @auth.metadata.admin && true", "read", "ok"],
    ["null = null && 'a' != 'b' && @now > _created_at && _updated_at <= @now", "read", "ok"],
  ];
  for (const [text, op, message] of cases) {
    test(`${op} ${JSON.stringify(text)}: ${message}`, () => {
      expect(verdict(text, op)).toBe(message);
    });
  }
});

/** A condition in both dialects: the text and its bound values. */
function rendered(c: ReturnType<typeof compileRule>) {
  const p1: Bound[] = [];
  const p2: Bound[] = [];
  return { sqlite: sqliteDialect.cond(c, p1), postgres: postgresDialect.cond(c, p2), params: p1, pgParams: p2 };
}

describe("compiling", () => {
  const user: RuleEnv = { auth: { id: "u1", email: "u1@example.com", verified: true, roles: ["editor"], metadata: {} }, now: 5 };
  const anon: RuleEnv = { auth: null, now: 5 };

  test("the fixed words compile to the same conditions as their expressions", () => {
    const pairs: [Rules[Operation], string][] = [
      ["owner", "_owner_id = @auth.id"],
      [{ role: "editor" }, "@auth.roles ?= 'editor'"],
      [{ role: "staff" }, "@auth.roles ?= 'staff'"],
      ["authenticated", "@auth.id != null"],
      ["public", "true"],
      ["disabled", "false"],
    ];
    for (const [fixed, text] of pairs) {
      for (const env of [user, anon]) {
        const a = compileRule(fixedRule("posts", "read", fixed as never), env);
        const b = compileRule(checkRuleValue(CATALOG, POSTS, "read", text), env);
        expect(a).toEqual(b);
      }
    }
    // As a read filter `owner` is the owner column compared with the caller: the condition list reads use today.
    expect(rendered(compileRule(fixedRule("posts", "read", "owner"), user))).toEqual({ sqlite: '"posts"."_owner_id" = ?', postgres: '"posts"."_owner_id" = ?', params: ["u1"], pgParams: ["u1"] });
    expect(compileRule(fixedRule("posts", "read", "owner"), anon)).toEqual({ k: "false" });
  });

  test("what the request knows is folded before any SQL", () => {
    const rule = checkRuleValue(CATALOG, POSTS, "update", "@auth.roles ?= 'editor' || (@request.body.status:isset && @now > 3)");
    expect(compileRule(rule, user)).toEqual({ k: "true" });
    expect(compileRule(rule, anon)).toEqual({ k: "false" });
    expect(compileRule(rule, { ...anon, body: { status: null } })).toEqual({ k: "true" });
    const mixed = checkRuleValue(CATALOG, POSTS, "read", "status = 'published' || _owner_id = @auth.id");
    expect(rendered(compileRule(mixed, anon)).sqlite).toBe('"posts"."status" = ?');
    expect(rendered(compileRule(mixed, user))).toMatchObject({ sqlite: '("posts"."status" = ? OR "posts"."_owner_id" = ?)', params: ["published", "u1"] });
  });

  test("one rule gives one statement text, whatever the values", () => {
    const rule = checkRuleValue(CATALOG, POSTS, "read", "room.owner.email = @auth.email && @exists(members, room = @record.room && user = @auth.id)");
    const a = rendered(compileRule(rule, user));
    const b = rendered(compileRule(rule, { ...user, auth: { ...user.auth!, id: "u2", email: "other" } }));
    expect(a.sqlite).toBe(b.sqlite);
    expect(a.postgres).toBe(b.postgres);
    expect(a.params).toEqual(["u1@example.com", "u1"]);
    expect(b.params).toEqual(["other", "u2"]);
  });

  test("hostile literals, metadata and body values are bound, never written into the SQL", () => {
    const hostile = `x'); DROP TABLE posts; --`;
    const rule = checkRuleValue(CATALOG, POSTS, "update", `title = '${hostile.replace(/'/g, "\\'")}' || status = @auth.metadata.plan || title ~ @request.body.q || room.name = "\\" OR 1=1 --"`);
    const env: RuleEnv = { ...user, auth: { ...user.auth!, metadata: { plan: `"; DELETE FROM _users; --` } }, body: { q: "%' OR '1'='1" } };
    const r = rendered(compileRule(rule, env));
    for (const sql of [r.sqlite, r.postgres]) {
      expect(sql).not.toContain("DROP");
      expect(sql).not.toContain("DELETE");
      expect(sql).not.toContain("1=1");
      expect(sql).not.toContain("'1'");
    }
    expect(r.params).toEqual([hostile, `"; DELETE FROM _users; --`, "%' OR '1'='1", '" OR 1=1 --']);
  });

  test("identifiers come only from the catalog: a name that could break out of its quotes is not a name", () => {
    expect(verdict('title" = 1')).toBe("unterminated text starting at 6 [6]");
    expect(verdict("ti-tle = 1")).toBe("unexpected character '-' at 3 [3]");
    expect(verdict("@auth.metadata.a\"b = 1")).toBe("unterminated text starting at 17 [17]");
    expect(verdict("@exists(\"posts\", true)")).toBe("unexpected '\"posts\"' at 9: expected a collection name [9]");
    // Metadata keys look only at the user's own keys: inherited names hold nothing.
    const rule = checkRuleValue(CATALOG, POSTS, "read", "@auth.metadata.constructor = null && @auth.metadata.__proto__ = null && @auth.metadata.toString = null");
    expect(compileRule(rule, user)).toEqual({ k: "true" });
  });

  test("LIKE in memory: % any run, _ one character (not one UTF-16 unit), ASCII case only, linear time", () => {
    expect(likeMatch("Hello", "%ell%")).toBe(true);
    expect(likeMatch("HELLO", "h_llo")).toBe(true);
    expect(likeMatch("😀x", "_x")).toBe(true);
    expect(likeMatch("É", "é")).toBe(false);
    expect(likeMatch("a%b", "a%b")).toBe(true);
    expect(likeMatch("ab", "a_b")).toBe(false);
    expect(likeMatch("", "%")).toBe(true);
    expect(likeMatch("a".repeat(2000), `${"%a".repeat(500)}b`)).toBe(false);
  });
});

describe("which rules name a field", () => {
  const notes = collection("notes", [["body", "text"], ["room", "text"]], { read: "@exists(members, room = @record.room && user = @auth.id)", update: "room.owner.email = @auth.email" });
  const members = collection("members", [["room", "text"], ["user", "text"], ["role", "text"]], { create: "@request.body.role = 'guest'", delete: "owner" });
  const rooms = collection("rooms", [["name", "text"], ["owner", "text"]], { read: "name ~ 'x' || labels ?= @auth.id" });
  const users = collection("users", [["email", "text"]]);
  const catalog = catalogOf([notes, members, rooms, users], [rel("a", "notes.room", "rooms", "one"), rel("b", "rooms.owner", "users", "one"), rel("c", "rooms.labels", "users", "many_via")]);

  const cases: [string, string, string[]][] = [
    ["members", "user", ["notes.read"]],
    ["members", "ROOM", ["notes.read"]],
    ["notes", "room", ["notes.read", "notes.update"]],
    ["rooms", "owner", ["notes.update"]],
    ["users", "email", ["notes.update"]],
    ["members", "role", ["members.create"]],
    ["rooms", "labels", ["rooms.read"]],
    ["rooms", "name", ["rooms.read"]],
    ["notes", "body", []],
    ["members", "_owner_id", []],
  ];
  for (const [col, field, want] of cases) {
    test(`${col}.${field}: ${want.join(", ") || "none"}`, () => {
      expect(rulesNamingField(catalog, col, field).map((u) => `${u.collection}.${u.op}`)).toEqual(want);
    });
  }

  test("a stored rule that no longer checks denies, and counts as naming the fields its text holds", () => {
    // The relation notes.room went away: the update rule's path is broken.
    const broken = catalogOf([notes, members, rooms, users], [rel("b", "rooms.owner", "users", "one")]);
    const notes2 = { ...notes };
    const rule = ruleFor(broken, notes2, "update");
    expect(rule.term).toEqual({ k: "const", v: false });
    expect(rule.broken).toBe("'room' in 'room.owner.email' at 1 is not a relation of 'notes'");
    expect(compileRule(rule, { auth: { id: "u", email: "e", verified: true, roles: [], metadata: {} }, now: 0 })).toEqual({ k: "false" });
    const again = catalogOf([notes2, members, rooms, users], [rel("b", "rooms.owner", "users", "one")]);
    expect(rulesNamingField(again, "users", "email").map((u) => `${u.collection}.${u.op}`)).toEqual(["notes.update"]);
  });
});
