import type { AppContext } from "../context.ts";
import type { Engine } from "../db/engine.ts";
import type { SharedLimits } from "./hub.ts";

/** How often a node marks its streams as alive; rows not marked for STREAM_STALE_MS belong to a stopped node. */
export const STREAM_HEARTBEAT_MS = 20_000;
export const STREAM_STALE_MS = 60_000;

/**
 * The per-address limits over the streams of every node: one `_realtime_streams` row per open stream,
 * counted and written in one serializable transaction (two nodes admitting the last slot at once cannot
 * both succeed: one is run again and sees the other's row).
 */
export function sharedLimits(ctx: AppContext, db: Engine, node: string): SharedLimits & { stop(): void } {
  const alive = () => ctx.clock.now() - STREAM_STALE_MS;
  const usage = (ip: string, except: string) =>
    db.get<{ n: number; topics: number }>(
      "SELECT COUNT(*) AS n, COALESCE(SUM(topics), 0) AS topics FROM _realtime_streams WHERE ip = ? AND id <> ? AND seen_at > ?",
      [ip, except, alive()],
    );
  const heartbeat = setInterval(() => {
    const now = ctx.clock.now();
    void db
      .transaction(async () => {
        await db.run("UPDATE _realtime_streams SET seen_at = ? WHERE node = ?", [now, node]);
        await db.run("DELETE FROM _realtime_streams WHERE seen_at <= ?", [now - STREAM_STALE_MS]);
      })
      .catch((err) => ctx.log.warn("realtime streams not marked alive", { error: String(err) }));
  }, STREAM_HEARTBEAT_MS);
  heartbeat.unref?.();
  return {
    admit: (id, ip, topics, maxStreams, maxTopics) =>
      db.transaction(async () => {
        const used = (await usage(ip, id))!;
        if (used.n >= maxStreams) return "streams";
        if (used.topics + topics > maxTopics) return "topics";
        await db.run("INSERT INTO _realtime_streams (id, node, ip, topics, seen_at) VALUES (?, ?, ?, ?, ?)", [id, node, ip, topics, ctx.clock.now()]);
        return null;
      }),
    retopic: (id, ip, topics, maxTopics) =>
      db.transaction(async () => {
        if ((await usage(ip, id))!.topics + topics > maxTopics) return "topics";
        await db.run("UPDATE _realtime_streams SET topics = ?, seen_at = ? WHERE id = ?", [topics, ctx.clock.now(), id]);
        return null;
      }),
    release(id) {
      db.run("DELETE FROM _realtime_streams WHERE id = ?", [id]).catch((err) =>
        ctx.log.warn("an ended realtime stream was not forgotten", { error: String(err) }),
      );
    },
    known: async (id) => !!(await db.get<{ n: number }>("SELECT 1 AS n FROM _realtime_streams WHERE id = ? AND seen_at > ?", [id, alive()])),
    stop: () => clearInterval(heartbeat),
  };
}
