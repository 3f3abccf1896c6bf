-- Current state per entity, read with FINAL. Not partitioned: a ReplacingMergeTree only collapses
-- rows inside one partition, and no date of these entities is fixed for their life (a customer's
-- first_purchase_date appears later), so a month partition could keep two states of one entity.
-- Duplicated inserts are harmless: the same (key, version) row twice collapses to one, and the
-- insert token of 0001 drops identical redelivered batches before that.

-- customer.changed carries a full snapshot with a version that grows with every change: the row
-- with the highest version is the customer.
CREATE TABLE IF NOT EXISTS customers_current (
  program_id           Int64,
  customer_id          Int64,
  partner_id           Nullable(Int64),
  partner_program_id   Nullable(Int64),
  click_id             Nullable(String),
  status               LowCardinality(String),
  provisional          Bool,
  test                 Bool,
  signup_date          Nullable(DateTime64(6, 'UTC')),
  first_purchase_date  Nullable(DateTime64(6, 'UTC')),
  version              UInt32,
  updated_at           DateTime64(6, 'UTC')
) ENGINE = ReplacingMergeTree(version)
ORDER BY (program_id, customer_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- A sale is written by sale.recorded (its facts and first status) and at most one
-- sale.status_changed (refund or chargeback: one refund per sale), which does not repeat the
-- facts. Each event fills its own columns and leaves the others empty; max() per column merges
-- them into one row whatever the order or the number of copies, and status is the changed status
-- when there is one.
CREATE TABLE IF NOT EXISTS sales_current (
  program_id         Int64,
  sale_id            UUID,
  transaction_id     SimpleAggregateFunction(max, String),
  customer_id        SimpleAggregateFunction(max, Nullable(Int64)),
  partner_id         SimpleAggregateFunction(max, Nullable(Int64)),
  amount_cents       SimpleAggregateFunction(max, Int64),
  currency           SimpleAggregateFunction(max, LowCardinality(String)),
  occurred_at        SimpleAggregateFunction(max, Nullable(DateTime64(6, 'UTC'))),
  is_recurring       SimpleAggregateFunction(max, Bool),
  test               SimpleAggregateFunction(max, Bool),
  recorded_status    SimpleAggregateFunction(max, LowCardinality(String)),
  changed_status     SimpleAggregateFunction(max, LowCardinality(String)),
  status_changed_at  SimpleAggregateFunction(max, Nullable(DateTime64(6, 'UTC'))),
  status             String ALIAS if(changed_status = '', recorded_status, changed_status)
) ENGINE = AggregatingMergeTree
ORDER BY (program_id, sale_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- commission.created (state_version 1) then, on a refund, commission.reversed (state_version 2);
-- both carry the whole commission.
CREATE TABLE IF NOT EXISTS commissions_current (
  program_id     Int64,
  commission_id  UUID,
  sale_id        UUID,
  partner_id     Int64,
  amount_cents   Int64,
  currency       LowCardinality(String),
  status         LowCardinality(String),
  created_at     DateTime64(6, 'UTC'),
  reversed_at    Nullable(DateTime64(6, 'UTC')),
  state_version  UInt8
) ENGINE = ReplacingMergeTree(state_version)
ORDER BY (program_id, commission_id)
SETTINGS non_replicated_deduplication_window = 1000;
