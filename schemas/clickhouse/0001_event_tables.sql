-- One table per event kind, loaded from the event log (processors/loader/loader.ts). Columns: the event
-- envelope (event_id, program_id, occurred_at, test) then the payload fields under their own names.
--
-- Idempotency (docs/decisions/processors.md, "Warehouse loading"): delivery is at-least-once, so the same
-- event may be inserted more than once.
--   1. Every insert carries insert_deduplication_token derived from the batch (topic, partition,
--      offset range, content hash); non_replicated_deduplication_window makes a plain (Replacing)
--      MergeTree drop a block whose token it has already seen: an identical redelivered batch
--      writes nothing.
--   2. A batch cut differently (other offset range) passes (1). The tables are ReplacingMergeTree
--      keyed by event_id inside the sort key, and every read that counts uses FINAL (or
--      count(DISTINCT event_id)), so a duplicate row never counts, merged yet or not.
-- No materialized view reads these tables: a view would count every inserted block, duplicates
-- included.
--
-- Partitions by month of occurred_at (an event's time never changes, so a duplicate always lands
-- in the partition of its original and FINAL needs no cross-partition merge). Sort key: program_id
-- first (every dashboard query filters on it), then the UTC day, then event_id.

CREATE TABLE IF NOT EXISTS click_recorded (
  event_id          UUID,
  program_id        Int64,
  occurred_at       DateTime64(6, 'UTC'),
  test              Bool,
  click_id          String,
  partner_id        Nullable(Int64),
  referral_link_id  Int64,
  created_at        DateTime64(6, 'UTC'),
  loaded_at         DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS customer_changed (
  event_id             UUID,
  program_id           Int64,
  occurred_at          DateTime64(6, 'UTC'),
  test                 Bool,
  change               LowCardinality(String),
  customer_id          Int64,
  partner_id           Nullable(Int64),
  partner_program_id   Nullable(Int64),
  click_id             Nullable(String),
  status               LowCardinality(String),
  provisional          Bool,
  signup_date          Nullable(DateTime64(6, 'UTC')),
  first_purchase_date  Nullable(DateTime64(6, 'UTC')),
  version              UInt32,
  updated_at           DateTime64(6, 'UTC'),
  loaded_at            DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS sale_recorded (
  event_id        UUID,
  program_id      Int64,
  occurred_at     DateTime64(6, 'UTC'),
  test            Bool,
  sale_id         UUID,
  transaction_id  String,
  customer_id     Nullable(Int64),
  partner_id      Nullable(Int64),
  amount_cents    Int64,
  currency        LowCardinality(String),
  status          LowCardinality(String),
  is_recurring    Bool,
  created_at      DateTime64(6, 'UTC'),
  loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS sale_status_changed (
  event_id        UUID,
  program_id      Int64,
  occurred_at     DateTime64(6, 'UTC'),
  test            Bool,
  sale_id         UUID,
  transaction_id  String,
  status          LowCardinality(String),
  reason          LowCardinality(String),
  refund_id       UUID,
  changed_at      DateTime64(6, 'UTC'),
  loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS commission_created (
  event_id       UUID,
  program_id     Int64,
  occurred_at    DateTime64(6, 'UTC'),
  test           Bool,
  commission_id  UUID,
  sale_id        UUID,
  partner_id     Int64,
  amount_cents   Int64,
  currency       LowCardinality(String),
  status         LowCardinality(String),
  created_at     DateTime64(6, 'UTC'),
  loaded_at      DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS commission_reversed (
  event_id       UUID,
  program_id     Int64,
  occurred_at    DateTime64(6, 'UTC'),
  test           Bool,
  commission_id  UUID,
  sale_id        UUID,
  partner_id     Int64,
  amount_cents   Int64,
  currency       LowCardinality(String),
  status         LowCardinality(String),
  created_at     DateTime64(6, 'UTC'),
  loaded_at      DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS platform_fee_created (
  event_id         UUID,
  program_id       Int64,
  occurred_at      DateTime64(6, 'UTC'),
  test             Bool,
  platform_fee_id  UUID,
  commission_id    UUID,
  sale_id          UUID,
  amount_cents     Int64,
  currency         LowCardinality(String),
  created_at       DateTime64(6, 'UTC'),
  loaded_at        DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS platform_fee_reversed (
  event_id         UUID,
  program_id       Int64,
  occurred_at      DateTime64(6, 'UTC'),
  test             Bool,
  platform_fee_id  UUID,
  commission_id    UUID,
  sale_id          UUID,
  amount_cents     Int64,
  currency         LowCardinality(String),
  created_at       DateTime64(6, 'UTC'),
  loaded_at        DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS partner_program_changed (
  event_id            UUID,
  program_id          Int64,
  occurred_at         DateTime64(6, 'UTC'),
  test                Bool,
  partner_program_id  Int64,
  partner_id          Nullable(Int64),
  status              LowCardinality(String),
  created_at          DateTime64(6, 'UTC'),
  updated_at          DateTime64(6, 'UTC'),
  loaded_at           DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS test_event_logged (
  event_id         UUID,
  program_id       Int64,
  occurred_at      DateTime64(6, 'UTC'),
  test             Bool,
  tracking_log_id  Int64,
  event_type       LowCardinality(String),
  entity_id        String,
  created_at       DateTime64(6, 'UTC'),
  loaded_at        DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;
