-- Issue 31, points 1 and 2 (docs/decisions/partner-portal.md): applications, the partner's states
-- in a program (pending, approved, rejected, banned; 'removed' stays for existing rows), and the
-- partner portal's one-time sign-in links and sessions.

ALTER TABLE partner_programs DROP CONSTRAINT IF EXISTS partner_programs_status_check;
ALTER TABLE partner_programs
  ADD CONSTRAINT partner_programs_status_check CHECK (status IN ('pending', 'approved', 'rejected', 'banned', 'removed'));

-- Whether the public form /apply/:programId and POST /api/v1/partners/apply take applications.
ALTER TABLE programs ADD COLUMN applications_open boolean NOT NULL DEFAULT false;

-- What an applicant sent beside its partner row: one application per partner-program record. The
-- email is kept lower-cased: a second application of the same email in a program is refused
-- (the unique index decides when two arrive at once).
CREATE TABLE partner_applications (
  partner_program_id  bigint PRIMARY KEY REFERENCES partner_programs (id) ON DELETE CASCADE,
  program_id          bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  email               text NOT NULL CHECK (email = lower(email)),
  website             text,
  message             text,
  created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX partner_applications_program_email ON partner_applications (program_id, email);
-- Brand-created partners are looked up by email too when someone applies.
CREATE INDEX partners_email_lower ON partners (lower(email));

-- A one-time sign-in link into the portal, made by an owner of one program for one partner: only
-- the token's SHA-256 is stored; valid 24 hours, used once (used_at).
CREATE TABLE partner_portal_links (
  id          bigserial PRIMARY KEY,
  token_hash  text NOT NULL UNIQUE,
  partner_id  bigint NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
  program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX partner_portal_links_partner ON partner_portal_links (partner_id);

-- A portal session (cookie), hashed at rest, expiring; a ban or a sign-out deletes it. It sees the
-- partner's programs of one workspace: the workspace of the program whose link opened it.
CREATE TABLE partner_portal_sessions (
  id            bigserial PRIMARY KEY,
  token_hash    text NOT NULL UNIQUE,
  partner_id    bigint NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
  workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  program_id    bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL
);
CREATE INDEX partner_portal_sessions_partner ON partner_portal_sessions (partner_id);
