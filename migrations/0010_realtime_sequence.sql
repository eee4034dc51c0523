-- The order of change events across the nodes sharing a PostgreSQL database: one row, whose `n` each process
-- moves forward by the number of events of each change notice it sends, in the statement that sends it (the
-- row stays locked until that statement commits, so numbers follow the order in which every node receives
-- the notices). `epoch` names the sequence in event ids. Made by the first process that sends or listens.
-- (A single SQLite server numbers its events in memory: the table stays empty.)
CREATE TABLE `_realtime_sequence` (
  `id` integer PRIMARY KEY NOT NULL,
  `epoch` text NOT NULL,
  `n` integer NOT NULL
);
