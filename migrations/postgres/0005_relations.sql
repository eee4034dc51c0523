-- What a cascade soft delete did, so restoring the record that caused it can undo it (see ../0005_relations.sql).
CREATE TABLE "_relation_cascades" (
  "rowid" bigint GENERATED ALWAYS AS IDENTITY,
  "cause_col" text COLLATE baas_nocase NOT NULL,
  "cause_id" text NOT NULL,
  "relation_id" text NOT NULL,
  "kind" text NOT NULL,
  "rec_col" text COLLATE baas_nocase NOT NULL,
  "rec_id" text NOT NULL,
  "pos" bigint NOT NULL DEFAULT 0,
  PRIMARY KEY ("cause_col", "cause_id", "relation_id", "kind", "rec_id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "_relations_from" ON "_relations" ("from_col", "from_field" COLLATE baas_nocase);
