-- A new program-wide rule version on its program's row (0068): its id and start, and its terms,
-- when it starts after the row's latest (versions are appended in order of their start, under the
-- program's lock: domain/programs/terms.ts). record_sale takes a sale's terms from the row when
-- the sale's partner has no group and the sale is dated at or after that start.
CREATE OR REPLACE FUNCTION note_program_rule_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE programs
     SET rule_version = NEW.id, rule_version_from = NEW.effective_from, commission_type = NEW.commission_type,
         commission_rate = NEW.commission_rate, recurring_months = NEW.recurring_months
   WHERE id = NEW.program_id AND (rule_version_from IS NULL OR rule_version_from < NEW.effective_from);
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER commission_rule_versions_on_program AFTER INSERT ON commission_rule_versions
  FOR EACH ROW WHEN (NEW.group_id IS NULL) EXECUTE FUNCTION note_program_rule_version();
