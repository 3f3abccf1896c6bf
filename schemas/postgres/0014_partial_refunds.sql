-- Partial refunds from the payment processor (issue 12, point 4; docs/decisions/payments.md, "Partial
-- refunds"). The processor reports a charge's refunded total (cumulative) with every refund: the
-- sale keeps status paid and records that share of its amount as refunded, and its commission and
-- platform fee shrink by the same share. The rules are functions/record_partial_refund.sql.

-- The share of the sale amount refunded so far while the sale is paid (a full refund or
-- chargeback changes the status instead). The dashboard's revenue is amount_cents - refunded_cents.
ALTER TABLE sale_events ADD COLUMN refunded_cents bigint NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0);
-- What partial refunds took off the commission and the fee: amount_cents is what is left, so the
-- amount first earned is amount_cents + reversed_cents.
ALTER TABLE commissions ADD COLUMN reversed_cents bigint NOT NULL DEFAULT 0 CHECK (reversed_cents >= 0);
ALTER TABLE platform_fees ADD COLUMN reversed_cents bigint NOT NULL DEFAULT 0 CHECK (reversed_cents >= 0);

-- One row per partial refund applied: what it took off the sale, the commission and the fee.
-- refunded_cents (the sale's total after it) grows with every row of a sale.
CREATE TABLE partial_refunds (
  id                           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  sale_id                      uuid NOT NULL REFERENCES sale_events (id) ON DELETE CASCADE,
  program_id                   bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  amount_cents                 bigint NOT NULL CHECK (amount_cents > 0),
  refunded_cents               bigint NOT NULL,
  commission_reversed_cents    bigint NOT NULL DEFAULT 0,
  platform_fee_reversed_cents  bigint NOT NULL DEFAULT 0,
  created_at                   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (sale_id, refunded_cents)
);
