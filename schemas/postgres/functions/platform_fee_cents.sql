-- The platform's fee on a commission, in basis points of the commission, rounded half up.
CREATE OR REPLACE FUNCTION platform_fee_cents(commission bigint, fee_bps integer) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT round(commission * fee_bps / 10000.0)::bigint
$$;
