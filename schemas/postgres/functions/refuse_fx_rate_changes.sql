-- A stored exchange rate is fixed (docs/decisions/currencies.md): the converted totals of every day
-- it covered were reported with it. The import adds rows only; no write path may change or remove
-- one, whoever runs it.
CREATE OR REPLACE FUNCTION refuse_fx_rate_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'fx_rates: a stored rate is fixed; % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE OR REPLACE TRIGGER fx_rates_fixed BEFORE UPDATE OR DELETE ON fx_rates
  FOR EACH ROW EXECUTE FUNCTION refuse_fx_rate_changes();
