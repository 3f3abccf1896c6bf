-- Issue 15.
-- Dashboard sessions expire: a sliding lifetime (domain/access/workspaces.ts). Sessions made
-- before had none; they get the lifetime from now.
UPDATE dashboard_sessions SET expires_at = now() + interval '30 days' WHERE expires_at IS NULL;
ALTER TABLE dashboard_sessions ALTER COLUMN expires_at SET NOT NULL;
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);

-- Test sales have their own namespace: the spec's global guard holds among real sales only, and a
-- test transaction_id is unique within its program. A test sale can no longer block a real one.
ALTER TABLE sale_events DROP CONSTRAINT sale_events_transaction_id_key;
CREATE UNIQUE INDEX sale_events_transaction_id_key ON sale_events (transaction_id) WHERE NOT test;
CREATE UNIQUE INDEX sale_events_test_transaction_id_key ON sale_events (program_id, transaction_id) WHERE test;

-- A real sale refused because another program holds its transaction_id: the refused program
-- sees it in readiness (one row per program and transaction_id; never the other program's id).
CREATE TABLE transaction_id_collisions (
  program_id      bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  transaction_id  text NOT NULL,
  attempts        integer NOT NULL DEFAULT 1,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (program_id, transaction_id)
);
