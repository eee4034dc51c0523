-- What a cascade soft delete did, so restoring the record that caused it can undo it.
-- kind 'record': rec_col.rec_id was soft-deleted because cause_col.cause_id was.
-- kind 'link': the many_via link (rec_id → cause_id) of relation_id was removed.
CREATE TABLE `_relation_cascades` (
  `cause_col` text NOT NULL COLLATE NOCASE,
  `cause_id` text NOT NULL,
  `relation_id` text NOT NULL,
  `kind` text NOT NULL,
  `rec_col` text NOT NULL COLLATE NOCASE,
  `rec_id` text NOT NULL,
  `pos` integer NOT NULL DEFAULT 0,
  PRIMARY KEY (`cause_col`, `cause_id`, `relation_id`, `kind`, `rec_id`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `_relations_from` ON `_relations` (`from_col`, `from_field` COLLATE NOCASE);
