-- Records of change events too large for a change notice (see ../0008_realtime_payloads.sql).
CREATE TABLE "_realtime_payloads" (
  "id" text PRIMARY KEY NOT NULL,
  "record" text NOT NULL,
  "at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "_realtime_payloads_at" ON "_realtime_payloads" ("at");
