-- Full text as SQLite's index reads it (porter unicode61 remove_diacritics): every word kept (no stop words) and
-- stemmed, accents ignored. The `baas_fts` configuration copies `english` with a snowball stemmer that has no
-- stop-word list, after the `unaccent` dictionary where that extension can be had (a trusted extension since
-- PostgreSQL 13); then every full-text column made with `english` is made again with it.
DO $$
DECLARE
  has_unaccent boolean := false;
  col record;
  expr text;
  idx text;
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS unaccent;
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
  has_unaccent := EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'unaccent');
  IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'baas_english_stem' AND dictnamespace = current_schema()::regnamespace) THEN
    CREATE TEXT SEARCH DICTIONARY baas_english_stem (TEMPLATE = snowball, LANGUAGE = english);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'baas_fts' AND cfgnamespace = current_schema()::regnamespace) THEN
    CREATE TEXT SEARCH CONFIGURATION baas_fts (COPY = english);
    IF has_unaccent THEN
      ALTER TEXT SEARCH CONFIGURATION baas_fts ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH unaccent, baas_english_stem;
    ELSE
      ALTER TEXT SEARCH CONFIGURATION baas_fts ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH baas_english_stem;
    END IF;
  END IF;
  FOR col IN
    SELECT c.oid AS rel, c.relname AS tbl, pg_get_expr(d.adbin, d.adrelid) AS gen
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attname = '_fts' AND NOT a.attisdropped AND c.relnamespace = current_schema()::regnamespace
  LOOP
    IF position('''english''::regconfig' IN col.gen) = 0 THEN
      CONTINUE;
    END IF;
    expr := replace(col.gen, '''english''::regconfig', '''baas_fts''::regconfig');
    SELECT i.relname INTO idx FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
      WHERE x.indrelid = col.rel AND a.attname = '_fts' LIMIT 1;
    EXECUTE format('ALTER TABLE %I DROP COLUMN _fts', col.tbl);
    EXECUTE format('ALTER TABLE %I ADD COLUMN _fts tsvector GENERATED ALWAYS AS (%s) STORED', col.tbl, expr);
    IF idx IS NOT NULL THEN
      EXECUTE format('CREATE INDEX %I ON %I USING gin (_fts)', idx, col.tbl);
    END IF;
  END LOOP;
END $$;
