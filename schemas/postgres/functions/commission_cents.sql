-- The commission a paid sale earns, in the sale's minor units, or NULL when it earns none: one-off
-- types pay on the payment that converts the customer, recurring types on every payment. Percent
-- rates are percentages of the amount; fixed rates are major units (x100 minor units). Rounded half up.
CREATE OR REPLACE FUNCTION commission_cents(commission_type text, rate numeric, amount_cents bigint, converts boolean)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN NOT converts AND commission_type NOT IN ('recurring_percent', 'recurring_fixed') THEN NULL
    WHEN commission_type IN ('percent', 'recurring_percent') THEN round(amount_cents * rate / 100)
    ELSE round(rate * 100)
  END::bigint
$$;
