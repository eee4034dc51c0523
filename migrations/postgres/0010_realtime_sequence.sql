-- The order of change events across nodes (see ../0010_realtime_sequence.sql).
CREATE TABLE "_realtime_sequence" (
  "id" bigint PRIMARY KEY NOT NULL,
  "epoch" text NOT NULL,
  "n" bigint NOT NULL
);
