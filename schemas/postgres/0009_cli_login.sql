-- CLI browser login (issue 16): login sessions, account login tokens, synthetic-chain fixtures
-- and the chain runs counted for the 10-per-program-per-hour cap.

-- A suspended account cannot log in from the CLI (403 ACCOUNT_BLOCKED).
ALTER TABLE users ADD COLUMN suspended_at timestamptz;

-- One row per `svc login`. state is the public handle (it travels through the browser); the poll
-- secret is only ever in the CLI, stored here as its SHA-256. A session is completed once by the
-- callback (user_id set) and consumed once by the first poll after that, which mints the login
-- token then: no token exists, even briefly, in clear in the database.
CREATE TABLE cli_login_sessions (
  id                bigserial PRIMARY KEY,
  state             text NOT NULL UNIQUE,
  poll_secret_hash  text NOT NULL,
  nonce             text NOT NULL,
  user_code         text NOT NULL,
  expires_at        timestamptz NOT NULL,
  user_id           bigint REFERENCES users (id) ON DELETE CASCADE,
  completed_at      timestamptz,
  consumed_at       timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cli_login_sessions_expiry ON cli_login_sessions (expires_at);

-- Account login tokens, stored only as hashes. user_id deliberately has no foreign key: a token
-- whose user was deleted must answer 401 `User not found`, not vanish into `invalid token`.
CREATE TABLE cli_login_tokens (
  id          bigserial PRIMARY KEY,
  user_id     bigint NOT NULL,
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX cli_login_tokens_user ON cli_login_tokens (user_id);

-- The records the synthetic chain runs on: a test partner (pending, so it never counts as an
-- approved partner) and its referral link, created on the first chain and refreshed on each.
CREATE TABLE cli_test_fixtures (
  program_id          bigint PRIMARY KEY REFERENCES programs (id) ON DELETE CASCADE,
  partner_id          bigint NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
  partner_program_id  bigint NOT NULL REFERENCES partner_programs (id) ON DELETE CASCADE,
  referral_link_id    bigint NOT NULL REFERENCES referral_links (id) ON DELETE CASCADE,
  refreshed_at        timestamptz NOT NULL DEFAULT now()
);

-- One row per synthetic chain started: the cap counts the last hour's rows of a program.
CREATE TABLE cli_test_chain_runs (
  id          bigserial PRIMARY KEY,
  program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cli_test_chain_runs_program_time ON cli_test_chain_runs (program_id, created_at);
