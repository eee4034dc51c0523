-- Nothing to change on SQLite: its full-text index (FTS5, porter unicode61 remove_diacritics) already keeps every
-- word and ignores accents. The PostgreSQL migration of this name makes its index read words the same way.
SELECT 1;
