-- Open realtime streams of every node, for the per-address limits (see ../0007_realtime_streams.sql).
CREATE TABLE "_realtime_streams" (
  "id" text PRIMARY KEY NOT NULL,
  "node" text NOT NULL,
  "ip" text NOT NULL,
  "topics" bigint NOT NULL,
  "seen_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_realtime_streams_ip" ON "_realtime_streams" ("ip");
--> statement-breakpoint
CREATE INDEX "_realtime_streams_node" ON "_realtime_streams" ("node");
