-- The append-only tables, enforced by the database, not only by the code: an UPDATE, DELETE or
-- TRUNCATE fails whoever runs it, so no write path (a bug, a hand-run statement, a cascade) can
-- rewrite them. A correction is a new row.
--   ledger_entries (partner-program.md, "Ledger"): every money movement of a partner;
--   audit_log (partner-program.md, "Audit log"): who did what;
--   statement_checkpoints and their lines and sales (0066): a month's statement up to a closed
--   instant, which nothing can change any more.
-- A superuser can still switch triggers off with session_replication_role; for the ledger the
-- statement check, npm run ops -- verify-statement, finds what that changed.
CREATE OR REPLACE FUNCTION refuse_changes_to_append_only_table() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Each table's two triggers: <table>_no_update (rows) and <table>_no_truncate.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['ledger_entries', 'audit_log', 'statement_checkpoints', 'statement_checkpoint_lines', 'statement_checkpoint_sales'] LOOP
    EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION refuse_changes_to_append_only_table()', t || '_no_update', t);
    EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION refuse_changes_to_append_only_table()', t || '_no_truncate', t);
  END LOOP;
END
$$;
