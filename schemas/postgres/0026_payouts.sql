-- Issue 34: payouts (partner-program.md, "Payouts"; docs/decisions/ledger.md). The rules are
-- functions/create_payouts.sql and domain/ledger/payouts.ts.

CREATE DOMAIN payout_status AS text CHECK (VALUE IN ('pending', 'paid', 'canceled'));

-- One call of POST .../payouts. idempotency_key: the request's Idempotency-Key header, so an identical
-- retry answers the payouts the first call made instead of making any.
CREATE TABLE payout_runs (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  program_id       bigint NOT NULL,
  idempotency_key  text,
  cutoff           timestamptz NOT NULL,
  payout_ids       uuid[] NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT payout_runs_key UNIQUE (program_id, idempotency_key)
);

-- One payout per partner and currency of a run: what it covers is fixed at creation (commission_ids,
-- and the clawback and manual entries it nets); the ledger's payout entry is written when it is paid.
CREATE TABLE payouts (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  program_id          bigint NOT NULL,
  partner_id          bigint NOT NULL,
  run_id              uuid NOT NULL,
  currency            sale_currency NOT NULL,
  amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
  status              payout_status NOT NULL DEFAULT 'pending',
  cutoff              timestamptz NOT NULL,
  commission_ids      uuid[] NOT NULL,
  clawback_entry_ids  bigint[] NOT NULL,
  manual_entry_ids    bigint[] NOT NULL,
  reference           text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  paid_at             timestamptz,
  canceled_at         timestamptz
);
CREATE INDEX payouts_program ON payouts (program_id, created_at);
CREATE INDEX payouts_partner ON payouts (program_id, partner_id);

-- Which live payout (pending or paid) nets a clawback or manual entry: the primary key makes one
-- entry netted by at most one payout. A canceled payout's rows are deleted, so its entries are
-- outstanding again (this table is bookkeeping, not the ledger).
CREATE TABLE ledger_settlements (
  entry_id   bigint PRIMARY KEY,
  payout_id  uuid NOT NULL
);
CREATE INDEX ledger_settlements_payout ON ledger_settlements (payout_id);

-- How a partner is paid, for the payout exports: paypal {email}, wise {email, name, receiver_type},
-- or manual {note}. Set by an owner of a program the partner is in (the portal of issue 31 later).
CREATE TABLE partner_payout_methods (
  partner_id  bigint PRIMARY KEY REFERENCES partners (id) ON DELETE CASCADE,
  method      text NOT NULL CHECK (method IN ('paypal', 'wise', 'manual')),
  details     jsonb NOT NULL DEFAULT '{}',
  updated_at  timestamptz NOT NULL DEFAULT now()
);
