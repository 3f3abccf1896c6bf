-- Issue 33: the brand console. Its sign-in through the OpenID provider, the workspace's team
-- (invites), and the origins refused on clicks (shown in the console and in readiness).

-- A console sign-in in flight: the browser was sent to the provider with this state and nonce and
-- the S256 challenge of a PKCE verifier that only that browser tab holds. Completed once (used_at),
-- within 10 minutes; spent and expired rows are dropped a day later as new sign-ins start.
CREATE TABLE console_sign_ins (
  id              bigserial PRIMARY KEY,
  state           text NOT NULL UNIQUE,
  nonce           text NOT NULL,
  code_challenge  text NOT NULL,
  redirect_uri    text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz
);
CREATE INDEX console_sign_ins_expiry ON console_sign_ins (expires_at);

-- An owner's invitation of a person (by email) into a workspace with a role. The link's token is
-- stored only as its SHA-256; the invite is accepted once, by a signed-in person with that email,
-- before expires_at, unless an owner revoked it.
CREATE TABLE workspace_invites (
  id            bigserial PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  email         text NOT NULL CHECK (email = lower(email)),
  role          text NOT NULL CHECK (role IN ('owner', 'member')),
  token_hash    text NOT NULL UNIQUE,
  invited_by    bigint REFERENCES users (id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  accepted_at   timestamptz,
  accepted_by   bigint REFERENCES users (id) ON DELETE SET NULL,
  revoked_at    timestamptz
);
CREATE INDEX workspace_invites_workspace ON workspace_invites (workspace_id, created_at DESC);
-- The embedded provider and the console's sign-in ask whether an email holds an open invite.
CREATE INDEX workspace_invites_open_email ON workspace_invites (email) WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- A person's email compared without letter case (users.email keeps the case it was first given).
CREATE INDEX users_email_lower ON users (lower(email));

-- Browser clicks refused because their Origin is not among the program's allowed origins: one row
-- per program and origin, counted, so the console and readiness can say which origins to add.
-- Written outside the click's own statement (domain/programs/blocked-origins.ts), at most 50 per program.
CREATE TABLE blocked_origins (
  program_id     bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  origin         text NOT NULL,
  attempts       integer NOT NULL DEFAULT 1,
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  last_seen_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (program_id, origin)
);
