import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { makeBlog, makeRecord, makeUser, setRules, type Rules, type TestUser } from "../helpers/fixtures.ts";

// `expand` embeds only the related records the requester may read under the target
// collection's read rule (CONTRACT §6, docs "expand"): an owner-only target shows each user
// their own records, whoever else's records are linked too.

let t: TestApp;
let ann: TestUser;
let bob: TestUser;
let cy: TestUser;
let ed: TestUser;
/** Ann's post, which both Ann and Bob have commented on, tagged and given an author. */
let post: string;
const mine: Record<string, { author: string; comment: string; tag: string }> = {};
let adminTag: string;

/** A fresh app per describe: the first only reads; each test of the second sets every rule it relies on. */
async function setup() {
  t = createTestApp();
  ann = await makeUser(t, "ann@example.com");
  bob = await makeUser(t, "bob@example.com");
  cy = await makeUser(t, "cy@example.com");
  ed = await makeUser(t, "ed@example.com", ["editor"]);
  await makeBlog(t, {
    posts: { read: "authenticated", create: "authenticated", update: "authenticated" },
    targets: { read: "owner", create: "authenticated" },
  });
  post = await makeRecord(t, "posts", { title: "shared" }, ann.token);
  for (const u of [ann, bob])
    mine[u.email] = {
      author: await makeRecord(t, "authors", { name: u.email }, u.token),
      comment: await makeRecord(t, "comments", { post, text: `by ${u.email}` }, u.token),
      tag: await makeRecord(t, "tags", { label: `of ${u.email}` }, u.token),
    };
  adminTag = await makeRecord(t, "tags", { label: "of the admin" });
  // The admin may link records nobody else can read.
  const linked = await t.admin("PATCH", `/api/v1/posts/${post}`, {
    author: mine[bob.email].author,
    tags: [mine[bob.email].tag, adminTag, mine[ann.email].tag],
  });
  expect(linked.status).toBe(200);
}

const ids = (records: { _id: string }[] | null) => (records === null ? null : records.map((r) => r._id));

async function expanded(user: TestUser, query: string) {
  const one = await t.req("GET", `/api/v1/posts/${post}?expand=${query}`, { token: user.token });
  expect(one.status).toBe(200);
  const list = await t.req("GET", `/api/v1/posts?expand=${query}`, { token: user.token });
  expect(list.status).toBe(200);
  expect(list.body.items.length).toBe(1);
  // A list embeds exactly what a single read does.
  expect(list.body.items[0]._expand).toEqual(one.body._expand);
  return one.body;
}

describe("expand of a many and a many_via relation whose target is owner-only", () => {
  beforeAll(setup);
  afterAll(() => t.close());
  test("each user sees only their own comments and tags; the admin sees all", async () => {
    for (const u of [ann, bob]) {
      const body = await expanded(u, "comments,tags");
      expect(ids(body._expand.comments)).toEqual([mine[u.email].comment]);
      expect(ids(body._expand.tags)).toEqual([mine[u.email].tag]);
      expect(body._expand.comments[0]).toMatchObject({ _owner_id: u.id, text: `by ${u.email}` });
      expect(body._expand.tags[0]).toMatchObject({ _owner_id: u.id, label: `of ${u.email}` });
      // The virtual `many` field lists the same readable ids.
      expect(body.comments).toEqual([mine[u.email].comment]);
    }
    const admin = await t.admin("GET", `/api/v1/posts/${post}?expand=comments,tags`);
    expect(ids(admin.body._expand.comments)).toEqual([mine[ann.email].comment, mine[bob.email].comment].sort());
    expect(ids(admin.body._expand.tags)).toEqual([mine[bob.email].tag, adminTag, mine[ann.email].tag]);
  });

  test("a user who owns no target record gets empty arrays", async () => {
    const body = await expanded(cy, "comments,tags");
    expect(body._expand).toEqual({ comments: [], tags: [] });
    expect(body.comments).toEqual([]);
  });

  test("expand of a one relation to another user's owner-only record is null", async () => {
    expect((await expanded(ann, "author"))._expand).toEqual({ author: null });
    expect(ids([(await expanded(bob, "author"))._expand.author])).toEqual([mine[bob.email].author]);
  });
});

describe("expand when the target's read rule denies the requester", () => {
  beforeAll(setup);
  afterAll(() => t.close());
  const cases: { rule: Rules["read"]; user: () => TestUser; see: "none" | "all" }[] = [
    { rule: "disabled", user: () => ann, see: "none" },
    { rule: { role: "editor" }, user: () => ann, see: "none" },
    { rule: { role: "editor" }, user: () => ed, see: "all" },
    { rule: "authenticated", user: () => cy, see: "all" },
  ];
  for (const c of cases) {
    test(`target read ${JSON.stringify(c.rule)}, ${c.see === "none" ? "a denied" : "an allowed"} user: one → ${c.see === "none" ? "null" : "the record"}, many and many_via → ${c.see === "none" ? "null" : "every record"}`, async () => {
      for (const name of ["authors", "comments", "tags"]) await setRules(t, name, { read: c.rule });
      const body = await expanded(c.user(), "author,comments,tags");
      if (c.see === "none") {
        expect(body._expand).toEqual({ author: null, comments: null, tags: null });
        expect(body.comments).toBeNull();
        return;
      }
      expect(body._expand.author._id).toBe(mine[bob.email].author);
      expect(ids(body._expand.comments)).toEqual([mine[ann.email].comment, mine[bob.email].comment].sort());
      expect(ids(body._expand.tags)).toEqual([mine[bob.email].tag, adminTag, mine[ann.email].tag]);
    });
  }
});
