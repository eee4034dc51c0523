-- Change events of records too large for a change notice between nodes sharing a PostgreSQL database
-- (NOTIFY takes under 8000 bytes): the sending process stores the record here and the notice names the
-- row, so the other nodes deliver the record as it was at that change. Rows older than ten minutes are
-- dropped. (A single SQLite server has no other node: the table stays empty.)
CREATE TABLE `_realtime_payloads` (
  `id` text PRIMARY KEY NOT NULL,
  `record` text NOT NULL,
  `at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `_realtime_payloads_at` ON `_realtime_payloads` (`at`);
