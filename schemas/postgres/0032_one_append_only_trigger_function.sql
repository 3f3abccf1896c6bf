-- ledger_entries and audit_log refuse changes through one trigger function,
-- functions/refuse_changes_to_append_only_table.sql, whose file makes the four triggers. A database
-- made before has them on the two functions it replaces (ledger_entries_append_only,
-- audit_log_append_only): dropped here. The function files run after the numbered migrations, in
-- the same transaction, and all of them once any migration ran, so the triggers are made again
-- before anything commits: no transaction ever sees the tables without them.
DROP TRIGGER IF EXISTS ledger_entries_no_update ON ledger_entries;
DROP TRIGGER IF EXISTS ledger_entries_no_truncate ON ledger_entries;
DROP TRIGGER IF EXISTS audit_log_no_update ON audit_log;
DROP TRIGGER IF EXISTS audit_log_no_truncate ON audit_log;
DROP FUNCTION IF EXISTS ledger_entries_append_only();
DROP FUNCTION IF EXISTS audit_log_append_only();
