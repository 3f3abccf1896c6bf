-- Issue 30, point 5: the daily exchange rates the dashboard's, agent's and portal's converted totals
-- use (docs/decisions/currencies.md). One row per stored rate (fx_rate.recorded): EUR-based,
-- per_eur units of currency buy one euro on day; workspace_id 0 is the operator's, any other a
-- workspace's own. Postgres stores a (workspace, currency, day) once and never changes it, so the
-- sort key is that triple and a redelivered event collapses into its row. The totals read the
-- latest rate on or before each day at read time (queries/reporting-totals.ts): a rate loaded
-- later converts the earlier days it covers from its load on, nothing to recompute.
CREATE TABLE IF NOT EXISTS fx_rate_recorded (
  event_id      UUID,
  program_id    Int64,
  occurred_at   DateTime64(6, 'UTC'),
  test          Bool,
  workspace_id  Int64,
  currency      LowCardinality(String),
  day           Date,
  per_eur       Decimal(24, 10),
  created_at    DateTime64(6, 'UTC'),
  loaded_at     DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
ORDER BY (workspace_id, currency, day)
SETTINGS non_replicated_deduplication_window = 1000;
