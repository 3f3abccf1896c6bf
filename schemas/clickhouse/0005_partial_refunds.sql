-- Partial refunds from the payment processor (docs/decisions/payments.md, "Partial refunds"): their events'
-- tables, the refunded total on sales_current, adjusted commissions in commissions_current, and the
-- analytics views that show the reduced amounts.
--
-- Versions of a commission in commissions_current (state_version, widened to UInt64 here) and of
-- the sales and commissions facts in performance_facts (version): 1 recorded or created; 2 + the
-- cents taken off so far for a partial refund (the sale's refunded total, the commission's
-- reversed total: both only grow); 2^53 - 1 for the full refund, chargeback or reversal that ends
-- them. Rows written before this migration hold 2 for a full reversal, which no partial refund can
-- follow (a sale that is not paid takes none).

CREATE TABLE IF NOT EXISTS sale_partially_refunded (
  event_id           UUID,
  program_id         Int64,
  occurred_at        DateTime64(6, 'UTC'),
  test               Bool,
  partial_refund_id  UUID,
  sale_id            UUID,
  transaction_id     String,
  amount_cents       Int64,
  refunded_cents     Int64,
  currency           LowCardinality(String),
  refunded_at        DateTime64(6, 'UTC'),
  loaded_at          DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS commission_adjusted (
  event_id        UUID,
  program_id      Int64,
  occurred_at     DateTime64(6, 'UTC'),
  test            Bool,
  commission_id   UUID,
  sale_id         UUID,
  partner_id      Int64,
  amount_cents    Int64,
  currency        LowCardinality(String),
  status          LowCardinality(String),
  created_at      DateTime64(6, 'UTC'),
  reversed_cents  Int64,
  loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS platform_fee_adjusted (
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
  reversed_cents   Int64,
  loaded_at        DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- The sale's refunded total: 0 from sale.recorded and sale.status_changed, the total from each
-- sale.partially_refunded; max() keeps the highest whatever the order. No DEFAULT: every row the
-- loader writes names it, and the rows already there read 0.
ALTER TABLE sales_current ADD COLUMN IF NOT EXISTS refunded_cents SimpleAggregateFunction(max, Int64) AFTER amount_cents;

ALTER TABLE commissions_current MODIFY COLUMN state_version UInt64;

CREATE OR REPLACE VIEW analytics.sales (
  sale_id            UUID COMMENT 'The sale id',
  transaction_id     String COMMENT 'The transaction id sent by the brand (unique)',
  program_id         Int64 COMMENT 'The program of the sale',
  customer_id        Nullable(Int64) COMMENT 'The paying customer (join analytics.customers)',
  partner_id         Nullable(Int64) COMMENT 'The partner the sale is attributed to (NULL: not attributed)',
  amount_minor       Int64 COMMENT 'The sale amount in minor units of currency (cents), as paid',
  currency           LowCardinality(String) COMMENT 'ISO 4217 code of the amount: USD, EUR or VND',
  amount             Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  refunded_minor     Int64 COMMENT 'The part of the amount refunded by partial refunds while paid (0: none); the dashboard counts amount_minor - refunded_minor',
  refunded           Decimal(18, 2) COMMENT 'refunded_minor / 100, in the units of currency',
  status             LowCardinality(String) COMMENT 'paid (also when partly refunded), refunded or chargeback (current state)',
  is_recurring       Bool COMMENT 'A recurring payment of a subscription (not the first payment)',
  occurred_at        DateTime64(6, 'UTC') COMMENT 'When the payment happened (UTC; may be back-dated by the brand)',
  status_changed_at  Nullable(DateTime64(6, 'UTC')) COMMENT 'When the sale was refunded in full or charged back (UTC); NULL while paid',
  is_test            Bool COMMENT 'A test-mode sale: counted nowhere in the dashboard'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT sale_id, transaction_id, program_id, customer_id, partner_id, amount_cents AS amount_minor, currency,
          toDecimal64(amount_cents, 2) / 100 AS amount, refunded_cents AS refunded_minor,
          toDecimal64(refunded_cents, 2) / 100 AS refunded,
          if(changed_status = '', recorded_status, changed_status) AS status, is_recurring,
          assumeNotNull(occurred_at) AS occurred_at, status_changed_at, test AS is_test
     FROM sales_current FINAL
    WHERE recorded_status != ''
COMMENT 'One row per sale, its current status';

CREATE VIEW IF NOT EXISTS analytics.partial_refunds (
  partial_refund_id  UUID COMMENT 'The partial refund id',
  sale_id            UUID COMMENT 'The partly refunded sale (join analytics.sales)',
  transaction_id     String COMMENT 'The transaction id of the sale',
  program_id         Int64 COMMENT 'The program of the sale',
  amount_minor       Int64 COMMENT 'What this refund took off the sale amount, in minor units',
  refunded_minor     Int64 COMMENT 'The sale''s refunded total after this refund, in minor units',
  currency           LowCardinality(String) COMMENT 'ISO 4217 code of the amounts (the sale currency)',
  amount             Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  refunded_at        DateTime64(6, 'UTC') COMMENT 'When the partial refund was recorded (UTC)',
  is_test            Bool COMMENT 'The partial refund of a test-mode sale'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT partial_refund_id, sale_id, transaction_id, program_id, amount_cents AS amount_minor, refunded_cents AS refunded_minor,
          currency, toDecimal64(amount_cents, 2) / 100 AS amount, refunded_at, test AS is_test
     FROM sale_partially_refunded FINAL
COMMENT 'Partial refunds through the payment processor: one row per refund (a sale may have several; the one that completes it is in analytics.refunds)';

CREATE OR REPLACE VIEW analytics.commissions (
  commission_id  UUID COMMENT 'The commission id',
  sale_id        UUID COMMENT 'The sale that earned it (join analytics.sales)',
  program_id     Int64 COMMENT 'The program of the sale',
  partner_id     Int64 COMMENT 'The partner who earned it',
  amount_minor   Int64 COMMENT 'The commission in minor units of currency: what is left after partial refunds of its sale',
  currency       LowCardinality(String) COMMENT 'ISO 4217 code of the amount (the sale currency)',
  amount         Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  reversed_minor Int64 COMMENT 'What partial refunds of the sale took off the commission, in minor units (0: none)',
  status         LowCardinality(String) COMMENT 'pending, or reversed when its sale was refunded in full or charged back',
  created_at     DateTime64(6, 'UTC') COMMENT 'When the commission was created, with its sale (UTC)',
  reversed_at    Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was reversed (UTC); NULL while not reversed',
  is_test        Bool COMMENT 'A commission of a test-mode event'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT commission_id, any(sale_id) AS sale_id, any(program_id) AS program_id, argMax(partner_id, state) AS partner_id,
          argMax(amount_cents, state) AS amount_minor, argMax(currency, state) AS currency,
          toDecimal64(argMax(amount_cents, state), 2) / 100 AS amount, max(reversed_cents) AS reversed_minor,
          if(max(state) = 9007199254740991, 'reversed', argMax(status, state)) AS status, min(created_at) AS created_at,
          if(max(state) = 9007199254740991, maxIf(occurred_at, state = 9007199254740991), NULL) AS reversed_at, max(test) AS is_test
     FROM (SELECT commission_id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at, occurred_at, test,
                  toInt64(0) AS reversed_cents, toUInt64(1) AS state
             FROM commission_created FINAL
           UNION ALL
           SELECT commission_id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at, occurred_at, test,
                  reversed_cents, toUInt64(2 + reversed_cents) AS state
             FROM commission_adjusted FINAL
           UNION ALL
           SELECT commission_id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at, occurred_at, test,
                  toInt64(0) AS reversed_cents, toUInt64(9007199254740991) AS state
             FROM commission_reversed FINAL)
    GROUP BY commission_id
COMMENT 'Partner commissions: one row per commission, its current status';

CREATE OR REPLACE VIEW analytics.platform_fees (
  platform_fee_id  UUID COMMENT 'The platform fee id',
  commission_id    UUID COMMENT 'The commission it is charged on (join analytics.commissions)',
  sale_id          UUID COMMENT 'The sale behind the commission',
  program_id       Int64 COMMENT 'The program charged',
  amount_minor     Int64 COMMENT 'The fee in minor units of currency (PLATFORM_FEE_BPS of the commission): what is left after partial refunds',
  currency         LowCardinality(String) COMMENT 'ISO 4217 code of the amount',
  amount           Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  reversed_minor   Int64 COMMENT 'What partial refunds of the sale took off the fee, in minor units (0: none)',
  status           LowCardinality(String) COMMENT 'charged, or reversed with its commission',
  created_at       DateTime64(6, 'UTC') COMMENT 'When the fee was created (UTC)',
  reversed_at      Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was reversed (UTC); NULL while charged',
  is_test          Bool COMMENT 'A fee of a test-mode event (none are created in test mode)'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT platform_fee_id, any(commission_id) AS commission_id, any(sale_id) AS sale_id, any(program_id) AS program_id,
          argMax(amount_cents, state) AS amount_minor, argMax(currency, state) AS currency,
          toDecimal64(argMax(amount_cents, state), 2) / 100 AS amount, max(reversed_cents) AS reversed_minor,
          if(max(state) = 9007199254740991, 'reversed', 'charged') AS status, min(created_at) AS created_at,
          if(max(state) = 9007199254740991, maxIf(occurred_at, state = 9007199254740991), NULL) AS reversed_at, max(test) AS is_test
     FROM (SELECT platform_fee_id, commission_id, sale_id, program_id, amount_cents, currency, created_at, occurred_at, test,
                  toInt64(0) AS reversed_cents, toUInt64(1) AS state
             FROM platform_fee_created FINAL
           UNION ALL
           SELECT platform_fee_id, commission_id, sale_id, program_id, amount_cents, currency, created_at, occurred_at, test,
                  reversed_cents, toUInt64(2 + reversed_cents) AS state
             FROM platform_fee_adjusted FINAL
           UNION ALL
           SELECT platform_fee_id, commission_id, sale_id, program_id, amount_cents, currency, created_at, occurred_at, test,
                  toInt64(0) AS reversed_cents, toUInt64(9007199254740991) AS state
             FROM platform_fee_reversed FINAL)
    GROUP BY platform_fee_id
COMMENT 'Platform fees charged to programs: one row per fee, its current status';

-- A full refund or chargeback after partial refunds takes what they left: the amounts of
-- analytics.refunds and analytics.partial_refunds add up to what was refunded, never more.
CREATE OR REPLACE VIEW analytics.refunds (
  refund_id       UUID COMMENT 'The refund id',
  sale_id         UUID COMMENT 'The refunded sale (join analytics.sales)',
  transaction_id  String COMMENT 'The transaction id of the refunded sale',
  program_id      Int64 COMMENT 'The program of the sale',
  partner_id      Nullable(Int64) COMMENT 'The partner the refunded sale was attributed to',
  reason          LowCardinality(String) COMMENT 'refund or chargeback',
  amount_minor    Int64 COMMENT 'The refunded amount in minor units: the sale amount, less what partial refunds (analytics.partial_refunds) took off before',
  currency        LowCardinality(String) COMMENT 'ISO 4217 code of the amount',
  amount          Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  refunded_at     DateTime64(6, 'UTC') COMMENT 'When the refund or chargeback was tracked (UTC)',
  is_test         Bool COMMENT 'The refund of a test-mode sale'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT r.refund_id AS refund_id, r.sale_id AS sale_id, r.transaction_id AS transaction_id, r.program_id AS program_id,
          s.partner_id AS partner_id, r.reason AS reason, s.amount_cents - s.refunded_cents AS amount_minor, s.currency AS currency,
          toDecimal64(s.amount_cents - s.refunded_cents, 2) / 100 AS amount, r.changed_at AS refunded_at, r.test AS is_test
     FROM sale_status_changed AS r FINAL
     LEFT JOIN (SELECT sale_id, partner_id, amount_cents, refunded_cents, currency FROM sales_current FINAL WHERE recorded_status != '') AS s
       ON s.sale_id = r.sale_id
COMMENT 'Refunds and chargebacks in full: one row per refunded sale (at most one per sale; partial refunds are in analytics.partial_refunds)';
