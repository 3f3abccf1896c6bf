-- Issues 31 and 34, point 8 (the sale's bench:ingest figure): the program's latest program-wide
-- rule version on its row, so that a sale by a partner in no group, at or after that version's
-- start (nearly every sale), takes its terms from the program read it already makes. Until now
-- every sale sorted the program's versions to find the one in effect: about 8 µs of the 84 that
-- record_sale took for a repeat payment (docs/performance.md, "The rule version on the program's
-- row"). record_sale still looks the version up for a partner in a group and for a sale dated
-- before the latest version's start.
--
-- Kept by the trigger of functions/note_program_rule_version.sql on every new program-wide
-- version, which also writes that version's terms on the row (as updateProgram already did): the
-- row's terms are its latest version's. Versions are never changed (domain/programs/terms.ts).
ALTER TABLE programs ADD COLUMN rule_version integer, ADD COLUMN rule_version_from timestamptz;

UPDATE programs p
   SET rule_version = v.id, rule_version_from = v.effective_from
  FROM (SELECT DISTINCT ON (program_id) program_id, id, effective_from
          FROM commission_rule_versions WHERE group_id IS NULL
         ORDER BY program_id, effective_from DESC) v
 WHERE v.program_id = p.id;
