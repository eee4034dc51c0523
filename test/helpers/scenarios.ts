import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ChangeAction, ChangeEvent } from "../../src/events/bus.ts";
import { ADMIN_SECRET, createTestApp, registerUser, type TestApp, type TestResponse } from "./app.ts";

// Table-driven API scenarios that state the change events each call must produce, as PocketBase's
// ApiScenario states its ExpectedEvents: a call that publishes an event the row does not list, misses
// one, or publishes them in another order fails. A row with `events: []` asserts that nothing was
// published (a denied write, a 422, a rolled-back batch). The events are those committed on the app's
// bus (`ctx.events`), from which realtime, onCommit hooks and the relay between nodes are all derived.

/** A user of a table, registered when its app is made (`as: "<name>"` in a row). */
export interface ScenarioUser {
  token: string;
  id: string;
}

/** What the rows of a table share: its app, its users by name, and what its `setup` returned. */
export interface TableState<S> {
  t: TestApp;
  users: Record<string, ScenarioUser>;
  s: S;
}

/** What a row's callbacks see: the table's state, what the row's `before` returned (`v`) and, once sent, the answer. */
export interface RowState<S, V> extends TableState<S> {
  v: V;
  res: TestResponse;
}

/**
 * One expected change event: `"posts:create"`, `"posts:create:<id>"`, or an object. In an object,
 * `record` and `previous` are matched as `toMatchObject` does (the keys given, recursively), `id`
 * may be an asymmetric matcher (`expect.any(String)`); a key left out is not looked at.
 */
export type ExpectedEvent =
  | string
  | {
      collection: string;
      action: ChangeAction;
      id?: unknown;
      record?: Record<string, unknown>;
      previous?: Record<string, unknown>;
      by?: string | null;
    };

type Lazy<T, S, V> = T | ((x: Omit<RowState<S, V>, "res">) => T);
type Checked<T, S, V> = T | ((x: RowState<S, V>) => T);

export interface Scenario<S = unknown, V = any> {
  name: string;
  /** Runs first on the table's app (records the row needs); what it publishes is not captured. Its result is `v`. */
  before?: (x: TableState<S>) => Promise<V> | V;
  method: string;
  /** The path, e.g. `/api/v1/posts`. */
  url: Lazy<string, S, V>;
  /** Who calls: the admin secret, nobody, or a user of the table by name. Default admin. */
  as?: "admin" | "anonymous" | (string & {});
  /** Extra request headers (an `authorization` header here gives way to `as`'s token: use `as: "anonymous"` with it). */
  headers?: Lazy<Record<string, string>, S, V>;
  /** The request body: an object is sent as JSON, a string as it is. */
  body?: Lazy<string | number | boolean | null | object, S, V>;
  status: number;
  /** The answer's body, exactly. */
  answer?: Checked<string | number | boolean | null | object, S, V>;
  /** Keys the answer's body must have (as `toMatchObject`). */
  contains?: Checked<Record<string, unknown> | unknown[], S, V>;
  /** Every committed change event of the call, in order. */
  events: Checked<ExpectedEvent[], S, V>;
  /**
   * Each event carries the record as an admin's GET (`include_deleted=true`) now returns it, and a
   * hard-deleted one is gone (CONTRACT §10: the record as a read would return it). Checked for the last
   * event of each record; set false where a later write of the same call changed the record again.
   */
  current?: boolean;
  /** Further checks after the events (the stored state, a second read). */
  after?: (x: RowState<S, V>) => Promise<void> | void;
}

export interface TableOptions<S> {
  /** Users registered at the start, by name (`<name>@example.com`). */
  users?: string[];
  /** Makes the table's collections, relations and shared records; not captured. */
  setup?: (x: Omit<TableState<S>, "s">) => Promise<S | void> | S | void;
  /** Options of the table's app (hooks, settings). */
  app?: Parameters<typeof createTestApp>[0];
}

/** A captured event and whether it was delivered inside a transaction (it must not be). */
interface Captured {
  event: ChangeEvent;
  inTx: boolean;
}

/** `collection:action:id`, how a failure lists what was published. */
const summary = (e: ChangeEvent) => `${e.collection}:${e.action}:${e.record._id}`;

function normalise(e: ExpectedEvent): Exclude<ExpectedEvent, string> {
  if (typeof e !== "string") return e;
  const [collection, action, id] = e.split(":");
  if (!collection || !action) throw new Error(`an expected event is "collection:action[:id]", got "${e}"`);
  return id === undefined ? { collection, action: action as ChangeAction } : { collection, action: action as ChangeAction, id };
}

/**
 * The published events, in the shape of the expected ones (only the keys each names), so that a
 * mismatch shows as one readable diff of two lists. An event beyond the expected list is shown whole.
 */
function projected(actual: ChangeEvent[], expected: Exclude<ExpectedEvent, string>[]) {
  return actual.map((e, i) => {
    const want = expected[i];
    const out: Record<string, unknown> = { collection: e.collection, action: e.action };
    if (!want || want.id !== undefined) out.id = e.record._id;
    if (want && want.by !== undefined) out.by = e.by;
    return out;
  });
}

/** Waits for work queued behind the answer (a macrotask): an event delivered late is still caught. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs `check`; a failure names the row and lists what was published. */
async function explained(row: string, published: ChangeEvent[], check: () => Promise<void> | void): Promise<void> {
  try {
    await check();
  } catch (err) {
    if (err instanceof Error) err.message = `${row}\npublished: ${JSON.stringify(published.map(summary))}\n${err.message}`;
    throw err;
  }
}

/**
 * A `describe` of `rows` on one app (made once for the table, closed after it). Each row is a test of
 * its own; rows must not depend on each other's order (the suite runs in random order): a row makes
 * what it needs in `before`.
 */
export function scenarios<S = undefined>(title: string, opts: TableOptions<S>, rows: Scenario<S>[]): void {
  describe(title, () => {
    let state: TableState<S>;
    const published: Captured[] = [];
    beforeAll(async () => {
      const t = createTestApp(opts.app);
      await t.ready;
      const users: Record<string, ScenarioUser> = {};
      for (const name of opts.users ?? []) {
        const u = await registerUser(t, `${name}@example.com`);
        users[name] = { token: u.token, id: u.id };
      }
      const s = (await opts.setup?.({ t, users })) as S;
      state = { t, users, s };
      t.ctx.events.subscribe((event) => published.push({ event, inTx: t.db.inTransaction() }));
    });
    afterAll(async () => {
      await state?.t.close();
    });

    for (const row of rows) {
      test(row.name, async () => {
        const { t, users } = state;
        const v = await row.before?.(state);
        await settle();
        const x = { ...state, v };
        const token = row.as === undefined || row.as === "admin" ? ADMIN_SECRET : row.as === "anonymous" ? null : users[row.as]?.token;
        if (token === undefined) throw new Error(`${row.name}: no user "${row.as}" in the table`);
        const url = typeof row.url === "function" ? row.url(x) : row.url;
        const body = typeof row.body === "function" ? (row.body as (x: unknown) => unknown)(x) : row.body;
        const headers = typeof row.headers === "function" ? row.headers(x) : row.headers;
        published.length = 0;
        const res = await t.req(row.method, url, { token, body, headers });
        await settle();
        const seen = published.splice(0);
        const events = seen.map((c) => c.event);
        const done: RowState<S, unknown> = { ...x, res };
        const resolve = <T>(c: Checked<T, S, unknown>): T => (typeof c === "function" ? (c as (x: RowState<S, unknown>) => T)(done) : c);

        await explained(row.name, events, async () => {
          expect({ status: res.status, body: res.body }).toMatchObject({ status: row.status });
          if (row.answer !== undefined) expect(res.body).toEqual(resolve(row.answer));
          if (row.contains !== undefined) expect(res.body).toMatchObject(resolve(row.contains));

          const expected = resolve(row.events).map(normalise);
          expect(projected(events, expected)).toEqual(expected.map(({ collection, action, id, by }) => ({ collection, action, ...(id === undefined ? {} : { id }), ...(by === undefined ? {} : { by }) })));
          for (const [i, want] of expected.entries()) {
            if (want.record) expect(events[i]!.record).toMatchObject(want.record);
            if (want.previous) expect(events[i]!.previous).toMatchObject(want.previous);
          }
          // Delivered after the commit, each naming who made the change: the caller, unless the row names another
          // (a hook's tx writes as the admin).
          const actor = row.as === undefined || row.as === "admin" ? "admin" : row.as === "anonymous" ? null : users[row.as]!.id;
          for (const [i, c] of seen.entries()) {
            expect(c.inTx).toBe(false);
            expect(c.event.by).toBe(expected[i]?.by !== undefined ? expected[i]!.by : actor);
          }
          if (row.current !== false) await expectCurrent(t, events);
          await row.after?.(done);
        });
      });
    }
  });
}

/** The last event of each record carries it as an admin reads it now; a hard-deleted record is gone. */
async function expectCurrent(t: TestApp, events: ChangeEvent[]): Promise<void> {
  const last = new Map<string, ChangeEvent>();
  for (const e of events) last.set(`${e.collection}\0${e.record._id}`, e);
  for (const e of last.values()) {
    const res = await t.admin("GET", `/api/v1/${e.collection}/${e.record._id}?include_deleted=true`);
    if (e.action === "hard_delete") expect(res.status).toBe(404);
    else expect({ status: res.status, record: res.body }).toEqual({ status: 200, record: e.record });
  }
}
