-- Issue 30, point 5: several currencies (docs/decisions/currencies.md). A program reports in one
-- currency; daily exchange rates are stored as a central bank publishes them.

-- ISO 4217 code of the dashboard's, agent's and portal's converted totals. Sales, commissions, the
-- ledger and payouts keep the sale's currency.
ALTER TABLE programs ADD COLUMN reporting_currency text NOT NULL DEFAULT 'USD' CHECK (reporting_currency ~ '^[A-Z]{3}$');

-- Daily reference rates, EUR-based as the ECB publishes them: per_eur units of `currency` buy one
-- euro on `day` (EUR itself is 1 and never stored). A cross rate is derived: one unit of C is
-- per_eur(R) / per_eur(C) units of R. workspace_id 0 holds the operator's rates (npm run ops --
-- import-fx-rates), any other a workspace's own (the owners' endpoint), which win over the
-- operator's on the same day for that workspace's programs. A rate once stored is fixed: the
-- import refuses a different value for the same (workspace, currency, day), and nothing updates
-- or deletes rows (the trigger of functions/refuse_fx_rate_changes.sql).
CREATE TABLE fx_rates (
  workspace_id  bigint NOT NULL CHECK (workspace_id >= 0),
  currency      text NOT NULL CHECK (currency ~ '^[A-Z]{3}$' AND currency <> 'EUR'),
  day           date NOT NULL,
  per_eur       numeric(24, 10) NOT NULL CHECK (per_eur > 0),
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, currency, day)
);

