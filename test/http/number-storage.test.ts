import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appPerTest, createCollection, createTestApp } from "../helpers/app.ts";
import { onPostgres } from "../helpers/engine.ts";

// Number fields keep every JSON number exactly, whole or not, however large, and compare, sort, sum and
// match as text the same way on both engines.
const t = appPerTest((t) => createCollection(t, "nums"));

const VALUES = [731, -5, 0, 10.5, -0.25, 2 ** 53, 2 ** 60, -(2 ** 63), 2 ** 63, 1e300, 4.9e-324];

const ids = (res: { body: { items: { n: number }[] } }) => res.body.items.map((r) => r.n);

describe("number fields", () => {
  test("every value reads back as sent, by id, in lists, sorted and filtered", async () => {
    const made = await t.admin("POST", "/api/v1/nums/bulk", VALUES.map((n) => ({ n })));
    expect(made.status).toBe(201);
    expect(made.body.map((r: { n: number }) => r.n)).toEqual(VALUES);
    for (const r of made.body) expect((await t.req("GET", `/api/v1/nums/${r._id}`)).body.n).toBe(r.n);
    const sorted = await t.req("GET", "/api/v1/nums?sort=n:asc&total=false");
    expect(ids(sorted)).toEqual([...VALUES].sort((a, b) => a - b));
    expect(ids(await t.req("GET", "/api/v1/nums?filter=n:gt:10&sort=n:asc"))).toEqual([10.5, 731, 2 ** 53, 2 ** 60, 2 ** 63, 1e300]);
    expect(ids(await t.req("GET", "/api/v1/nums?filter=n:eq:731.0"))).toEqual([731]);
    expect(ids(await t.req("GET", "/api/v1/nums?filter=n:in:0,-0.25,9007199254740992&sort=n:asc"))).toEqual([-0.25, 0, 2 ** 53]);
  });

  test("a sum past 2^63 is a number, not an error", async () => {
    await t.admin("POST", "/api/v1/nums/bulk", [{ n: 9e18 }, { n: 9e18 }, { n: 1 }]);
    const res = await t.req("GET", "/api/v1/nums/aggregate?fn=sum&field=n");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ value: 18000000000000000001 });
    expect((await t.req("GET", "/api/v1/nums/aggregate?fn=sum&field=n&filter=n:lt:0")).body).toEqual({ value: 0 });
    expect((await t.req("GET", "/api/v1/nums/aggregate?fn=max&field=n")).body).toEqual({ value: 9e18 });
  });

  test("a sum past a double's range is null (Infinity), not an error, on both engines; per group too", async () => {
    await t.admin("POST", "/api/v1/nums/bulk", [{ n: 1e308, g: "a" }, { n: 1e308, g: "a" }, { n: 2, g: "b" }, { n: 3, g: "b" }]);
    const res = await t.req("GET", "/api/v1/nums/aggregate?fn=sum&field=n");
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { value: null } });
    expect((await t.req("GET", "/api/v1/nums/aggregate?fn=avg&field=n&filter=g:eq:b")).body).toEqual({ value: 2.5 });
    expect((await t.req("GET", "/api/v1/nums/aggregate?fn=sum&field=n&group_by=g")).body).toEqual({ groups: [{ group: "a", value: null }, { group: "b", value: 5 }] });
  });

  test("a sum of one value is that value, to its last digit, on both engines", async () => {
    for (const [i, n] of [2 ** 60, 0.1 + 0.2, 9007199254740993, 123456789012345678, 4.9e-324, -1.7976931348623157e308].entries()) {
      await t.admin("POST", "/api/v1/nums", { n, k: i });
      expect((await t.req("GET", `/api/v1/nums/aggregate?fn=sum&field=n&filter=k:eq:${i}`)).body).toEqual({ value: n });
      expect((await t.req("GET", `/api/v1/nums/aggregate?fn=avg&field=n&filter=k:eq:${i}`)).body).toEqual({ value: n });
    }
  });

  test("like reads a whole number without a fraction, as PostgreSQL does", async () => {
    await t.admin("POST", "/api/v1/nums/bulk", [{ n: 731 }, { n: 7.5 }, { n: 31.25 }]);
    expect(ids(await t.req("GET", "/api/v1/nums?filter=n:like:31&sort=n:asc"))).toEqual([31.25, 731]);
    expect(ids(await t.req("GET", "/api/v1/nums?filter=n:like:.0"))).toEqual([]);
    expect(ids(await t.req("GET", "/api/v1/nums?filter=n:like:.5"))).toEqual([7.5]);
  });
});

describe.skipIf(onPostgres)("SQLite file layout", () => {
  test("a new data directory stores 8 KiB pages", async () => {
    const app = createTestApp();
    try {
      await app.ready;
      expect(app.sqlite.query("PRAGMA page_size").get()).toEqual({ page_size: 8192 });
    } finally {
      await app.close();
    }
  });

  test("a database made with 4 KiB pages keeps them, and serves its records", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baas-pages-"));
    try {
      // The file as an older release made it: 4 KiB pages, in WAL mode.
      const probe = createTestApp({ dir });
      const file = probe.config.dbPath;
      await probe.close();
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      const raw = new Database(file, { create: true });
      raw.exec("PRAGMA page_size = 4096");
      raw.exec("PRAGMA journal_mode = WAL");
      raw.exec("CREATE TABLE older (x INTEGER)");
      raw.close();
      const app = createTestApp({ dir });
      try {
        await createCollection(app, "nums");
        const made = await app.admin("POST", "/api/v1/nums/bulk", VALUES.map((n) => ({ n })));
        expect(made.status).toBe(201);
        expect(app.sqlite.query("PRAGMA page_size").get()).toEqual({ page_size: 4096 });
        expect(ids(await app.req("GET", "/api/v1/nums?sort=n:desc&limit=2"))).toEqual([1e300, 2 ** 63]);
      } finally {
        await app.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
