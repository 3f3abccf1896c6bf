-- The audit log is append-only (partner-program.md, "Audit log"), enforced by the database, not
-- only by the code: an UPDATE, DELETE or TRUNCATE of audit_log fails whoever runs it, so no write
-- path (a bug, a hand-run statement, a cascade) can rewrite who did what. As for the ledger, a
-- superuser can still switch triggers off with session_replication_role.
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE OR REPLACE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE OR REPLACE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
