-- The ledger is append-only (partner-program.md, "Ledger"), enforced by the database, not only by
-- the code: an UPDATE, DELETE or TRUNCATE of ledger_entries fails whoever runs it. A correction is
-- a new entry. (A superuser can still switch triggers off with session_replication_role; the
-- statement check, npm run ops -- verify-statement, finds what that changed.)
CREATE OR REPLACE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE OR REPLACE TRIGGER ledger_entries_no_update BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only();
CREATE OR REPLACE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only();
