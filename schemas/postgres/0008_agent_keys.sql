-- Agent API keys (issue 13): `agt_` keys issued by an operator command, bound to one workspace and
-- a set of scopes, stored only as the SHA-256 of the whole key. Revoking sets revoked_at; the row
-- stays so the audit log keeps naming the key.
CREATE TABLE agent_keys (
  id            bigserial PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name          text NOT NULL,
  key_hash      text NOT NULL UNIQUE,
  key_masked    text NOT NULL,
  scopes        text[] NOT NULL CHECK (cardinality(scopes) > 0),
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- Updated at most once a minute per key (see domain/access/agent-keys.ts).
  last_used_at  timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX agent_keys_workspace ON agent_keys (workspace_id);

-- Every write an agent makes, with the key that made it. natural_key is the write's idempotency
-- key where it has one (a synthetic test event's reference): the same reference in the same
-- program is one event however often it is sent.
CREATE TABLE agent_audit_log (
  id            bigserial PRIMARY KEY,
  key_id        bigint NOT NULL REFERENCES agent_keys (id),
  workspace_id  bigint NOT NULL,
  program_id    bigint NOT NULL,
  action        text NOT NULL,
  target        text NOT NULL,
  outcome       text NOT NULL,
  natural_key   text,
  details       jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_audit_log_key ON agent_audit_log (key_id, created_at);
CREATE INDEX agent_audit_log_program ON agent_audit_log (program_id, created_at);
CREATE UNIQUE INDEX agent_audit_log_test_event ON agent_audit_log (program_id, natural_key) WHERE action = 'test_event.run';

-- The agent API lists partner-program records of a program in (created_at, id) order.
CREATE INDEX partner_programs_program_time ON partner_programs (program_id, created_at, id);
