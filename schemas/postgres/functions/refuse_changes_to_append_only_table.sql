-- The append-only tables, enforced by the database, not only by the code: an UPDATE, DELETE or
-- TRUNCATE fails whoever runs it, so no write path (a bug, a hand-run statement, a cascade) can
-- rewrite them. A correction is a new row.
--   ledger_entries (partner-program.md, "Ledger"): every money movement of a partner;
--   audit_log (partner-program.md, "Audit log"): who did what.
-- A superuser can still switch triggers off with session_replication_role; for the ledger the
-- statement check, npm run ops -- verify-statement, finds what that changed.
CREATE OR REPLACE FUNCTION refuse_changes_to_append_only_table() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE OR REPLACE TRIGGER ledger_entries_no_update BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION refuse_changes_to_append_only_table();
CREATE OR REPLACE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_changes_to_append_only_table();
CREATE OR REPLACE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION refuse_changes_to_append_only_table();
CREATE OR REPLACE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_changes_to_append_only_table();
