-- Issue 31, point 5: fraud rules, held commissions and the review queue (partner-program.md, "Fraud
-- review" and "Commission lifecycle"; docs/decisions/fraud-review.md). The rules are
-- functions/fraud_flags.sql, called by record_sale when the program has a rule on; a ban holds a
-- partner's commissions through functions/hold_partner_commissions.sql.

-- Each rule on or off per program, all on by default (ingest/management: the settings PATCH/GET).
ALTER TABLE programs
  ADD COLUMN fraud_rules jsonb NOT NULL
    DEFAULT '{"self_referral": true, "click_flood": true, "fast_conversion": true, "partner_ip": true}'
    CHECK (jsonb_typeof(fraud_rules) = 'object');

-- Why a commission is held: a JSON array of {"reason": <rule or cause>, ...evidence} (which email,
-- which IP, how many clicks, how many seconds), and since when. Kept after an owner's decision, so
-- the review's grounds stay readable.
ALTER TABLE commissions
  ADD COLUMN held_at timestamptz,
  ADD COLUMN hold_reasons jsonb;

-- The review queue (GET .../reviews): a program's held commissions, oldest first. Only held rows
-- are in it, so it stays as small as the queue.
CREATE INDEX commissions_held ON commissions (program_id, held_at, id) WHERE status = 'held';

-- The client addresses a partner signed into the portal from (domain/fraud/sign-in-addresses.ts,
-- called by the portal's sign-in): the partner_ip rule's evidence. One row per partner and address.
CREATE TABLE partner_sign_in_addresses (
  partner_id     bigint NOT NULL,
  client_ip      inet NOT NULL,
  sign_ins       integer NOT NULL DEFAULT 1,
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  last_seen_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partner_id, client_ip)
);

-- The click's client address is the click path's (migration 0055-0059 of the links work adds it);
-- named here too so this migration stands on its own.
ALTER TABLE clicks ADD COLUMN IF NOT EXISTS client_ip inet;
-- click_flood counts one address's clicks on one link within the hour before the sale's click: the
-- only index this work adds to clicks (its cost on the click path: docs/decisions/fraud-review.md).
CREATE INDEX clicks_flood ON clicks (client_ip, referral_link_id, created_at) WHERE client_ip IS NOT NULL;
