import { type EventSourceFactory, type EventSourceLike, type SseEvent } from "./event-source.js";
import { isBaasError } from "./errors.js";
import type { Transport } from "./transport.js";
import type { BaasRecord } from "./types.js";

/** A topic: `"posts"`, `"posts/<id>"`, or `{ collection, filter }` in the list's filter syntax. */
export type Topic = string | { collection: string; filter?: string | readonly string[] };

export type RealtimeAction = "create" | "update" | "delete" | "restore";

/**
 * One change, as the stream delivers it; `record` is the record as a read returns it (a hard delete:
 * `{ _id }` only). A record too large for the stream is read by the client before the handler gets it.
 */
export interface RealtimeEvent<T = BaasRecord> {
  collection: string;
  action: RealtimeAction;
  record: T;
  /** The event's id (what a reconnect resumes from). */
  id: string;
  /** Set when the record was too large for the stream and could not be read: `record` holds its `_id` only. */
  ref?: true;
}

/** Ends one subscription; the stream closes with the last one. */
export type Unsubscribe = () => Promise<void>;

export interface RealtimeApi {
  /**
   * Calls `handler` for every change of `topic` the caller may read. Opens the stream on the first
   * subscription; resolves once the server has the topic. A filter topic's handler gets the changes of
   * its collection that match it, or any other filter topic on the same collection.
   */
  subscribe<T = BaasRecord>(topic: Topic, handler: (event: RealtimeEvent<T>) => void): Promise<Unsubscribe>;
  /** Called when the server cannot replay what was missed (`too_old`) or dropped a slow stream (`overflow`): reload what you show. */
  onReset(handler: (reason: string) => void): void;
  /** Closes the stream and forgets every subscription. */
  close(): void;
}

/** An event as the stream sends it: `ref` marks a record sent by its `_id` only (too large for the stream). */
interface WireEvent {
  collection: string;
  action: RealtimeAction;
  record: BaasRecord;
  ref?: true;
}

interface Subscription {
  topic: Topic;
  handler: (event: RealtimeEvent<any>) => void;
}

const ACTIONS: RealtimeAction[] = ["create", "update", "delete", "restore"];

/** Whether an event of `collection` on record `id` belongs to a topic (see `subscribe` for filter topics). */
function matches(topic: Topic, collection: string, id: unknown): boolean {
  const lower = collection.toLowerCase();
  if (typeof topic !== "string") return topic.collection.toLowerCase() === lower;
  const slash = topic.indexOf("/");
  if (slash < 0) return topic.toLowerCase() === lower;
  return topic.slice(0, slash).toLowerCase() === lower && topic.slice(slash + 1) === id;
}

/**
 * Realtime over one Server-Sent Events stream (CONTRACT §10): the stream is opened bare, as a browser's
 * `EventSource` must, and each `connect` (also after a reconnect) is answered with `POST /realtime`
 * carrying every topic, sent with the session's token (refreshed on a 401 like any call).
 */
export function createRealtime(t: Transport, EventSourceImpl: EventSourceFactory): RealtimeApi {
  const subs = new Set<Subscription>();
  const resetHandlers = new Set<(reason: string) => void>();
  let source: EventSourceLike | null = null;
  let clientId: Promise<string> | null = null;
  let connected: ((id: string) => void) | null = null;
  // Topic updates go out one at a time, in order, so the last one sent is the one the server keeps.
  let sending: Promise<unknown> = Promise.resolve();
  // Events reach the handlers one at a time, in the order they came (see dispatch).
  let delivering: Promise<void> = Promise.resolve();

  function open(): Promise<string> {
    clientId = new Promise<string>((resolve) => (connected = resolve));
    source = new EventSourceImpl(`${t.baseUrl}/realtime`);
    source.addEventListener("connect", (e: SseEvent) => {
      const id = (JSON.parse(e.data) as { client_id: string }).client_id;
      if (connected) {
        connected(id);
        connected = null;
      } else {
        // A reconnect: a new client id, whose topics must be set again.
        clientId = Promise.resolve(id);
        void sync().catch(() => {});
      }
    });
    for (const action of ACTIONS)
      source.addEventListener(action, (e: SseEvent) => {
        const data = JSON.parse(e.data) as WireEvent;
        // In order: an event waits for the one before it, which may be reading its record.
        delivering = delivering.then(() => dispatch(data, e.lastEventId));
      });
    source.addEventListener("reset", (e: SseEvent) => {
      const reason = (JSON.parse(e.data) as { reason?: string }).reason ?? "reset";
      for (const h of resetHandlers) h(reason);
    });
    return clientId;
  }

  /**
   * Hands an event to the handlers of its topics. A record too large for the stream comes as a
   * reference (`ref`, `record` holding its `_id`): it is read first, as the session may read it; one
   * that cannot be read any more (gone, or no longer readable) is skipped, a later event tells why;
   * one that could not be read now (the network) is handed on as it came, `ref` set.
   */
  async function dispatch(data: WireEvent, id: string): Promise<void> {
    const targets = [...subs].filter((s) => matches(s.topic, data.collection, data.record?._id));
    if (!targets.length) return;
    const event: RealtimeEvent = { collection: data.collection, action: data.action, record: data.record, id };
    if (data.ref) {
      const path = `/${encodeURIComponent(data.collection)}/${encodeURIComponent(String(data.record._id))}`;
      try {
        event.record = await t.request<BaasRecord>("GET", path, { query: new URLSearchParams({ include_deleted: "true" }) });
      } catch (err) {
        if (isBaasError(err) && err.status === 404) return;
        event.ref = true;
      }
    }
    for (const s of targets) {
      if (!subs.has(s)) continue;
      try {
        s.handler(event);
      } catch (err) {
        // A handler's error is the app's, as it would be from the stream's own listener: thrown, not swallowed.
        setTimeout(() => {
          throw err;
        });
      }
    }
  }

  /** Sends the current topics for the current stream. */
  function sync(): Promise<unknown> {
    const run = async () => {
      if (!clientId) return;
      const client_id = await clientId;
      await t.request("POST", "/realtime", { body: { client_id, subscriptions: [...subs].map((s) => s.topic) } });
    };
    const next = sending.then(run, run);
    sending = next.catch(() => {});
    return next;
  }

  function close(): void {
    source?.close();
    source = null;
    clientId = null;
    connected = null;
  }

  return {
    async subscribe<T>(topic: Topic, handler: (event: RealtimeEvent<T>) => void): Promise<Unsubscribe> {
      const sub: Subscription = { topic, handler };
      subs.add(sub);
      if (!source) open();
      try {
        await sync();
      } catch (err) {
        subs.delete(sub);
        if (!subs.size) close();
        throw err;
      }
      return async () => {
        if (!subs.delete(sub)) return;
        if (!subs.size) close();
        else await sync();
      };
    },
    onReset: (handler) => void resetHandlers.add(handler),
    close: () => {
      subs.clear();
      close();
    },
  };
}
