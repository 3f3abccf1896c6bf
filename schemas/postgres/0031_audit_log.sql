-- Issue 32, point 6: the audit log (partner-program.md, "Audit log"). One row per brand-side write,
-- appended by domain/audit/audit.ts in the transaction of the write itself, so a write and its
-- entry commit or roll back together. Append-only: the trigger of functions/refuse_changes_to_append_only_table.sql
-- refuses UPDATE, DELETE and TRUNCATE. docs/decisions/audit-log.md.

-- No foreign keys: an entry outlives what it names (a deleted endpoint, a removed member), and a
-- cascade from programs or workspaces would be a DELETE the trigger refuses.
-- program_id: null for a workspace's own writes (team, invites); those show in the log of every
-- program of the workspace.
-- actor_type 'user' (dashboard session or CLI account: actor_id the user id), 'agent' (actor_id the
-- agent key id) or 'system' (the service seeding outside a request: actor_id 'demo', 'bench');
-- actor_label: the user's email or the key's name when written, for reading.
-- before, after: the target's state around the write, secrets redacted; null for a creation's
-- before and a deletion's after.
CREATE TABLE audit_log (
  id            bigserial PRIMARY KEY,
  workspace_id  bigint NOT NULL,
  program_id    bigint,
  actor_type    text NOT NULL CHECK (actor_type IN ('user', 'agent', 'system')),
  actor_id      text NOT NULL,
  actor_label   text,
  action        text NOT NULL,
  target_type   text NOT NULL,
  target_id     text NOT NULL,
  before        jsonb,
  after         jsonb,
  request_id    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
-- The program's log, newest first, and the workspace's own entries shown beside it.
CREATE INDEX audit_log_program ON audit_log (program_id, created_at DESC, id DESC) WHERE program_id IS NOT NULL;
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, created_at DESC, id DESC) WHERE program_id IS NULL;
