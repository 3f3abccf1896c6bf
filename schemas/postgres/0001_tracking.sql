-- Tracking state: the system of record. Every state change also appends to outbox in the same
-- transaction; the relay (pipeline/) publishes the outbox to the event log.

CREATE TABLE workspaces (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id          bigserial PRIMARY KEY,
  email       text NOT NULL UNIQUE,
  name        text,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
  workspace_id bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role         text NOT NULL CHECK (role IN ('owner', 'member')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX members_user ON members (user_id);

-- Session tokens are stored only as SHA-256 hashes.
CREATE TABLE dashboard_sessions (
  id          bigserial PRIMARY KEY,
  user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz
);

CREATE TABLE programs (
  id                       bigserial PRIMARY KEY,
  workspace_id             bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name                     text NOT NULL,
  domain                   text NOT NULL,
  attribution_window_days  integer NOT NULL DEFAULT 60 CHECK (attribution_window_days BETWEEN 1 AND 3650),
  lead_auth                text NOT NULL DEFAULT 'server_required' CHECK (lead_auth IN ('server_required', 'browser_allowed')),
  payment_tracking_mode    text NOT NULL DEFAULT 'processor_connect' CHECK (payment_tracking_mode IN ('processor_connect', 's2s')),
  commission_type          text NOT NULL CHECK (commission_type IN ('percent', 'fixed', 'recurring_percent', 'recurring_fixed')),
  commission_rate          numeric(14, 4) NOT NULL CHECK (commission_rate > 0),
  allowed_origins          text[] NOT NULL DEFAULT '{}',
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX programs_workspace ON programs (workspace_id);
-- CORS preflights ask whether any program allows an origin.
CREATE INDEX programs_allowed_origins ON programs USING gin (allowed_origins);

-- One key per program, replaced in place. Only the SHA-256 of the whole key is kept, so keys
-- issued before the aff_ prefix still match exactly.
CREATE TABLE program_api_keys (
  program_id          bigint PRIMARY KEY REFERENCES programs (id) ON DELETE CASCADE,
  key_hash            text NOT NULL UNIQUE,
  key_masked          text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  rotation_marked_at  timestamptz,
  rotation_deadline   timestamptz,
  CHECK ((rotation_marked_at IS NULL) = (rotation_deadline IS NULL))
);

CREATE TABLE partners (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL,
  email       text,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- The partner-program junction. partner_id survives as NULL when a partner account is deleted,
-- which is the state behind `partnerId required to create commission`.
CREATE TABLE partner_programs (
  id          bigserial PRIMARY KEY,
  partner_id  bigint REFERENCES partners (id) ON DELETE SET NULL,
  program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  status      text NOT NULL DEFAULT 'approved' CHECK (status IN ('pending', 'approved', 'rejected', 'removed')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (partner_id, program_id)
);
CREATE INDEX partner_programs_program ON partner_programs (program_id, status);

-- A link may lose its program or partner (misconfiguration): clicks on it answer 400.
CREATE TABLE referral_links (
  id                  bigserial PRIMARY KEY,
  aff_code            text NOT NULL UNIQUE,
  program_id          bigint REFERENCES programs (id) ON DELETE SET NULL,
  partner_id          bigint REFERENCES partners (id) ON DELETE SET NULL,
  partner_program_id  bigint REFERENCES partner_programs (id) ON DELETE SET NULL,
  enabled             boolean NOT NULL DEFAULT true,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX referral_links_program ON referral_links (program_id);

CREATE TABLE clicks (
  click_id            text PRIMARY KEY,
  program_id          bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  partner_id          bigint REFERENCES partners (id) ON DELETE SET NULL,
  partner_program_id  bigint REFERENCES partner_programs (id) ON DELETE SET NULL,
  referral_link_id    bigint NOT NULL REFERENCES referral_links (id) ON DELETE CASCADE,
  affiliate_url       text NOT NULL,
  test                boolean NOT NULL DEFAULT false,
  created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX clicks_program_time ON clicks (program_id, created_at);

-- A customer whose first event is a sale (no lead call) starts as a conversion with no signup_date.
-- A provisional lead (browser lead on a server_required program) has status lead and provisional.
CREATE TABLE customers (
  id                   bigserial PRIMARY KEY,
  program_id           bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  click_id             text UNIQUE REFERENCES clicks (click_id) ON DELETE SET NULL,
  partner_id           bigint REFERENCES partners (id) ON DELETE SET NULL,
  partner_program_id   bigint REFERENCES partner_programs (id) ON DELETE SET NULL,
  customer_key         text,
  email                text,
  status               text NOT NULL CHECK (status IN ('lead', 'conversion')),
  provisional          boolean NOT NULL DEFAULT false,
  test                 boolean NOT NULL DEFAULT false,
  signup_date          timestamptz,
  first_purchase_date  timestamptz,
  version              integer NOT NULL DEFAULT 1,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (program_id, customer_key)
);
CREATE INDEX customers_key ON customers (customer_key) WHERE customer_key IS NOT NULL;

CREATE TABLE sale_events (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  program_id           bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  customer_id          bigint REFERENCES customers (id) ON DELETE SET NULL,
  partner_id           bigint REFERENCES partners (id) ON DELETE SET NULL,
  transaction_id       text NOT NULL,
  amount_cents         bigint NOT NULL CHECK (amount_cents >= 0),
  currency             text NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
  occurred_at          timestamptz NOT NULL,
  provider             text,
  provider_payment_id  text,
  livemode             boolean,
  is_recurring         boolean NOT NULL DEFAULT false,
  sale_type            text,
  subscription_id      text,
  test                 boolean NOT NULL DEFAULT false,
  status               text NOT NULL DEFAULT 'paid' CHECK (status IN ('paid', 'refunded', 'chargeback')),
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  -- Unique globally, not per program (the duplicate guard).
  CONSTRAINT sale_events_transaction_id_key UNIQUE (transaction_id)
);
CREATE INDEX sale_events_program_time ON sale_events (program_id, occurred_at);
CREATE INDEX sale_events_customer ON sale_events (customer_id);

CREATE TABLE commissions (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  sale_id          uuid NOT NULL UNIQUE REFERENCES sale_events (id) ON DELETE CASCADE,
  program_id       bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  partner_id       bigint NOT NULL REFERENCES partners (id),
  customer_id      bigint REFERENCES customers (id) ON DELETE SET NULL,
  commission_type  text NOT NULL,
  commission_rate  numeric(14, 4) NOT NULL,
  amount_cents     bigint NOT NULL CHECK (amount_cents >= 0),
  currency         text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'reversed')),
  created_at       timestamptz NOT NULL DEFAULT now(),
  reversed_at      timestamptz
);
CREATE INDEX commissions_program_time ON commissions (program_id, created_at);

CREATE TABLE platform_fees (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  sale_id        uuid NOT NULL UNIQUE REFERENCES sale_events (id) ON DELETE CASCADE,
  commission_id  uuid NOT NULL REFERENCES commissions (id) ON DELETE CASCADE,
  program_id     bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  amount_cents   bigint NOT NULL CHECK (amount_cents >= 0),
  currency       text NOT NULL,
  status         text NOT NULL DEFAULT 'charged' CHECK (status IN ('charged', 'reversed')),
  created_at     timestamptz NOT NULL DEFAULT now(),
  reversed_at    timestamptz
);

-- Full refunds and chargebacks only: at most one per sale.
CREATE TABLE refunds (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  sale_id        uuid NOT NULL UNIQUE REFERENCES sale_events (id) ON DELETE CASCADE,
  program_id     bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  reason         text NOT NULL CHECK (reason IN ('refund', 'chargeback')),
  refund_reason  text,
  created_at     timestamptz NOT NULL DEFAULT now()
);

-- Test-mode events, read by the integration checklist and readiness.
CREATE TABLE tracking_logs (
  id          bigserial PRIMARY KEY,
  program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  event_type  text NOT NULL CHECK (event_type IN ('click', 'lead', 'sale')),
  entity_id   text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tracking_logs_program ON tracking_logs (program_id, event_type, created_at DESC);

-- Events appended in the same transaction as the state change they describe. txid records the
-- writing transaction so a relay can read in commit order (ids are taken before commit).
CREATE TABLE outbox (
  id             bigserial PRIMARY KEY,
  event_id       uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  txid           xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_type     text NOT NULL,
  aggregate_key  text NOT NULL,
  program_id     bigint NOT NULL,
  test           boolean NOT NULL,
  occurred_at    timestamptz NOT NULL,
  payload        jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  relayed_at     timestamptz
);
CREATE INDEX outbox_unrelayed ON outbox (id) WHERE relayed_at IS NULL;
