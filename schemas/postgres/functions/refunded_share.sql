-- The share of an amount, in minor units, rounded half up. Every partial refund computes the total
-- share from the charge's cumulative refund and subtracts what earlier ones took, so the rounding
-- never adds up across refunds.
CREATE OR REPLACE FUNCTION refunded_share(amount_cents bigint, refunded numeric, charged numeric) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT round(amount_cents * refunded / charged)::bigint
$$;
