import { afterEach, expect, test } from "bun:test";
import { createCollection, createTestApp, type TestApp } from "../helpers/app.ts";

// Reads of one record by id made together (SQLite batches them per event-loop turn, in one read
// transaction): each answers what was committed before it was asked, with writes going on around them.

const apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

test("concurrent clients each read back at once what they just created, updated and deleted", async () => {
  const t = createTestApp();
  apps.push(t);
  await createCollection(t, "posts", { read: "public", create: "public", update: "public", delete: "public" });
  const client = async (c: number) => {
    for (let round = 0; round < 5; round++) {
      const created = await t.req("POST", "/api/v1/posts", { body: { title: `c${c}r${round}`, n: round, tags: ["a"], done: true } });
      expect(created.status).toBe(201);
      const id = created.body._id as string;
      const read = await t.req("GET", `/api/v1/posts/${id}`);
      expect({ status: read.status, body: read.body }).toEqual({ status: 200, body: created.body });
      const updated = await t.req("PATCH", `/api/v1/posts/${id}`, { body: { n: round + 100 } });
      expect(updated.status).toBe(200);
      expect((await t.req("GET", `/api/v1/posts/${id}`)).body).toEqual(updated.body);
      expect((await t.req("DELETE", `/api/v1/posts/${id}`)).status).toBe(200);
      expect((await t.req("GET", `/api/v1/posts/${id}`)).status).toBe(404);
    }
  };
  await Promise.all(Array.from({ length: 32 }, (_, c) => client(c)));
});
