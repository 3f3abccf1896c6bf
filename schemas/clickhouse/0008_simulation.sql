-- Issue 30, point 4: what the what-if simulation (queries/simulate.ts) reads of each sale in one
-- merged read of sales_current (FINAL): the commission the sale first earned. commission.created writes it
-- into the sale's row (processors/loader/mappers.ts; max() merges it with the sale's other
-- columns, whatever the order), so the simulation needs no second grouping of commission_created
-- and no join of as many rows (bench/simulate.ts). The sales loaded before this migration get it
-- from the commission_created rows already loaded.
ALTER TABLE sales_current ADD COLUMN IF NOT EXISTS commission_cents SimpleAggregateFunction(max, Int64);

INSERT INTO sales_current (program_id, sale_id, transaction_id, customer_id, partner_id, amount_cents, refunded_cents, currency, occurred_at,
                           is_recurring, test, recorded_status, changed_status, status_changed_at, commission_cents)
SELECT program_id, sale_id, '', NULL, NULL, 0, 0, '', NULL, false, false, '', '', NULL, max(amount_cents)
  FROM commission_created
 GROUP BY program_id, sale_id;
