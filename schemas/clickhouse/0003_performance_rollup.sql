-- The dashboard's figures, pre-aggregated per program and UTC hour, so a 90-day answer reads about
-- 2,000 small rows instead of every event (docs/decisions/dashboard.md, "Performance rollup").
--
-- A materialized view would count every inserted block, and the same event can arrive in blocks
-- that no insert token catches (a batch cut differently after a restart, an event the relay
-- published twice). So the rollup is never incremented: the loader writes one fact per counted
-- entity into performance_facts (a ReplacingMergeTree, so copies collapse), then recomputes the
-- rollup rows of the hours its batch touched from the facts with FINAL. Recomputing an hour is
-- exact whatever was delivered before, and doing it again changes nothing.

-- One row per entity that a dashboard figure counts, at the hour it is counted in (fixed for the
-- entity's life: a click's time, a signup or first purchase, a sale's occurred_at, a commission's
-- or partner-program record's creation), with whether it counts now. A later state of the same
-- entity replaces the earlier one (higher version).
--   clicks       a click event (entity: event_id); counts unless test
--   leads        a customer by signup_date (entity: customer_id); counts when status lead or
--                conversion, not provisional, not test; version: the snapshot's
--   conversions  a customer by first_purchase_date; counts when status conversion, not test
--   sales        a sale by occurred_at (entity: sale_id), amount and currency; counts while paid and
--                not test; version 1 recorded, 2 its refund or chargeback
--   commissions  a commission by created_at (entity: commission_id); counts until reversed;
--                version 1 created, 2 reversed
--   partners     a partner-program record by created_at (entity: its id); always counts
CREATE TABLE IF NOT EXISTS performance_facts (
  program_id  Int64,
  hour        DateTime('UTC'),
  metric      LowCardinality(String),
  entity      String,
  currency    LowCardinality(String),
  cents       Int64,
  counts      Bool,
  version     UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(hour)
ORDER BY (program_id, hour, metric, entity)
SETTINGS non_replicated_deduplication_window = 1000;

-- The figures of one program in one UTC hour, recomputed whole from performance_facts (FINAL)
-- whenever a batch touches that hour; the latest computation wins. Money per currency. No
-- deduplication window: every recompute must land.
CREATE TABLE IF NOT EXISTS performance_hourly (
  program_id    Int64,
  hour          DateTime('UTC'),
  clicks        UInt64,
  leads         UInt64,
  conversions   UInt64,
  partners      UInt64,
  sales         Map(LowCardinality(String), UInt64),
  revenue       Map(LowCardinality(String), Int64),
  commissions   Map(LowCardinality(String), UInt64),
  commission    Map(LowCardinality(String), Int64),
  computed_at   DateTime64(9, 'UTC')
) ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(hour)
ORDER BY (program_id, hour);

-- The computation of an hour, in performance_hourly's column order: the loader recomputes the
-- hours a batch touched with a WHERE on program_id and hour (processors/loader/rollup.ts), which ClickHouse
-- pushes down to the facts' sort key; now64(9) is the time of that computation.
CREATE VIEW IF NOT EXISTS performance_hours_computed AS
SELECT program_id, hour,
       countIf(metric = 'clicks' AND counts) AS clicks, countIf(metric = 'leads' AND counts) AS leads,
       countIf(metric = 'conversions' AND counts) AS conversions, countIf(metric = 'partners' AND counts) AS partners,
       sumMapIf(map(currency, toUInt64(1)), metric = 'sales' AND counts) AS sales,
       sumMapIf(map(currency, cents), metric = 'sales' AND counts) AS revenue,
       sumMapIf(map(currency, toUInt64(1)), metric = 'commissions' AND counts) AS commissions,
       sumMapIf(map(currency, cents), metric = 'commissions' AND counts) AS commission,
       now64(9) AS computed_at
  FROM performance_facts FINAL
 GROUP BY program_id, hour;

-- Backfill from what an older warehouse already holds (a fresh one inserts nothing). Every version
-- row goes in; performance_facts keeps the latest of each entity.
INSERT INTO performance_facts
SELECT program_id, toStartOfHour(occurred_at), 'clicks', toString(event_id), '', 0, NOT test, 0
  FROM click_recorded;

INSERT INTO performance_facts
SELECT program_id, toStartOfHour(assumeNotNull(signup_date)), 'leads', toString(customer_id), '', 0,
       status IN ('lead', 'conversion') AND NOT provisional AND NOT test, version
  FROM customers_current
 WHERE signup_date IS NOT NULL;

INSERT INTO performance_facts
SELECT program_id, toStartOfHour(assumeNotNull(first_purchase_date)), 'conversions', toString(customer_id), '', 0,
       status = 'conversion' AND NOT test, version
  FROM customers_current
 WHERE first_purchase_date IS NOT NULL;

INSERT INTO performance_facts
SELECT program_id, toStartOfHour(assumeNotNull(occurred_at)), 'sales', toString(sale_id), currency, amount_cents,
       status = 'paid' AND NOT test, if(changed_status = '', 1, 2)
  FROM sales_current FINAL
 WHERE occurred_at IS NOT NULL;

INSERT INTO performance_facts
SELECT program_id, toStartOfHour(created_at), 'commissions', toString(commission_id), currency, amount_cents,
       status <> 'reversed', state_version
  FROM commissions_current;

INSERT INTO performance_facts
SELECT program_id, toStartOfHour(created_at), 'partners', toString(partner_program_id), '', 0, true, 0
  FROM partner_program_changed;

-- Every hour once.
INSERT INTO performance_hourly SELECT * FROM performance_hours_computed;
