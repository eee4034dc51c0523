-- Open realtime streams of the nodes sharing a PostgreSQL database, so the per-address stream and topic
-- limits count every node's streams. `seen_at` is refreshed by the stream's node; rows of a node that
-- stopped refreshing are dropped. (A single SQLite server counts its streams in memory: the table stays empty.)
CREATE TABLE `_realtime_streams` (
  `id` text PRIMARY KEY NOT NULL,
  `node` text NOT NULL,
  `ip` text NOT NULL,
  `topics` integer NOT NULL,
  `seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_realtime_streams_ip` ON `_realtime_streams` (`ip`);
--> statement-breakpoint
CREATE INDEX `_realtime_streams_node` ON `_realtime_streams` (`node`);
