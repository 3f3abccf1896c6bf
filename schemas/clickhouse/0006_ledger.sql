-- Issue 34: the ledger and payouts in the warehouse (docs/decisions/ledger.md). The events' tables,
-- as every event table (0001: ReplacingMergeTree keyed by event_id, insert tokens, read with FINAL,
-- so a redelivered batch or a replay writes no second row), and the analysts' views
-- analytics.ledger_entries and analytics.payouts. None of them feeds the dashboard: its commission
-- figures stay the commissions created that day (0003).

CREATE TABLE IF NOT EXISTS ledger_entry_recorded (
  event_id       UUID,
  program_id     Int64,
  occurred_at    DateTime64(6, 'UTC'),
  test           Bool,
  entry_id       Int64,
  partner_id     Int64,
  kind           LowCardinality(String),
  amount_minor   Int64,
  currency       LowCardinality(String),
  commission_id  Nullable(UUID),
  sale_id        Nullable(UUID),
  payout_id      Nullable(UUID),
  cause          String,
  rule_version   Nullable(Int32),
  reason         Nullable(String),
  created_at     DateTime64(6, 'UTC'),
  available_at   DateTime64(6, 'UTC'),
  loaded_at      DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS commission_approved (
  event_id       UUID,
  program_id     Int64,
  occurred_at    DateTime64(6, 'UTC'),
  test           Bool,
  commission_id  UUID,
  sale_id        UUID,
  partner_id     Int64,
  amount_cents   Int64,
  currency       LowCardinality(String),
  approved_at    DateTime64(6, 'UTC'),
  approved_by    LowCardinality(String),
  reason         Nullable(String),
  loaded_at      DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS payout_created (
  event_id            UUID,
  program_id          Int64,
  occurred_at         DateTime64(6, 'UTC'),
  test                Bool,
  payout_id           UUID,
  partner_id          Int64,
  currency            LowCardinality(String),
  amount_minor        Int64,
  status              LowCardinality(String),
  cutoff              DateTime64(6, 'UTC'),
  commission_ids      Array(UUID),
  clawback_entry_ids  Array(Int64),
  manual_entry_ids    Array(Int64),
  reference           Nullable(String),
  created_at          DateTime64(6, 'UTC'),
  paid_at             Nullable(DateTime64(6, 'UTC')),
  canceled_at         Nullable(DateTime64(6, 'UTC')),
  loaded_at           DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS payout_paid AS payout_created;

CREATE TABLE IF NOT EXISTS payout_canceled AS payout_created;

CREATE VIEW IF NOT EXISTS analytics.ledger_entries (
  entry_id       Int64 COMMENT 'The ledger entry id (one money movement of a partner in a program; entries are never changed or deleted)',
  program_id     Int64 COMMENT 'The program',
  partner_id     Int64 COMMENT 'The partner whose balance the entry moves',
  kind           LowCardinality(String) COMMENT 'commission (+, earned by a sale), adjustment (-, partial refund before payment), reversal (-, full refund, chargeback or rejection before payment), clawback (-, refund or chargeback after payment), payout (-, a paid payout), manual (+ or -, an owner''s adjustment with a reason)',
  amount_minor   Int64 COMMENT 'Signed amount in minor units of currency: a partner''s balance in a currency is the sum of its entries',
  currency       LowCardinality(String) COMMENT 'ISO 4217 code of the amount (the sale currency)',
  amount         Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  commission_id  Nullable(UUID) COMMENT 'The commission it belongs to (join analytics.commissions); NULL for payout and manual entries',
  sale_id        Nullable(UUID) COMMENT 'The sale behind the commission (join analytics.sales)',
  payout_id      Nullable(UUID) COMMENT 'The payout of a payout entry (join analytics.payouts)',
  cause          String COMMENT 'The unique cause: sale:<id>, refund:<id>, partial_refund:<id>, reject:<commission id>, payout:<id>, manual:<program>:<partner>:<key>',
  rule_version   Nullable(Int32) COMMENT 'The commission rule version of a commission entry (NULL until rule versions exist)',
  reason         Nullable(String) COMMENT 'The owner''s reason of a manual entry or a rejection; the reference of a payout entry',
  created_at     DateTime64(6, 'UTC') COMMENT 'When the entry was recorded (UTC); statements group entries by its UTC month',
  available_at   DateTime64(6, 'UTC') COMMENT 'When it is payable (UTC): a commission''s hold end; created_at for the other kinds'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT entry_id, program_id, partner_id, kind, amount_minor, currency, toDecimal64(amount_minor, 2) / 100 AS amount,
          commission_id, sale_id, payout_id, cause, rule_version, reason, created_at, available_at
     FROM ledger_entry_recorded FINAL
COMMENT 'The partners'' append-only ledger: one row per money movement';

CREATE VIEW IF NOT EXISTS analytics.payouts (
  payout_id           UUID COMMENT 'The payout id',
  program_id          Int64 COMMENT 'The program paying',
  partner_id          Int64 COMMENT 'The partner paid',
  currency            LowCardinality(String) COMMENT 'ISO 4217 code of the amount (one payout per partner and currency)',
  amount_minor        Int64 COMMENT 'What it pays, in minor units: its commissions plus the clawback and manual entries it nets',
  amount              Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  status              LowCardinality(String) COMMENT 'pending (created, not paid yet), paid, or canceled (its commissions are approved again)',
  cutoff              DateTime64(6, 'UTC') COMMENT 'The payout run''s cutoff: it covers what was approved by then (UTC)',
  commissions         UInt64 COMMENT 'How many commissions it covers',
  commission_ids      Array(UUID) COMMENT 'The commissions it covers (join analytics.commissions)',
  clawback_entry_ids  Array(Int64) COMMENT 'The clawback entries it nets (join analytics.ledger_entries)',
  manual_entry_ids    Array(Int64) COMMENT 'The manual entries it nets (join analytics.ledger_entries)',
  reference           Nullable(String) COMMENT 'The payment reference given when it was marked paid',
  created_at          DateTime64(6, 'UTC') COMMENT 'When the payout run created it (UTC)',
  paid_at             Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was marked paid (UTC); NULL otherwise',
  canceled_at         Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was canceled (UTC); NULL otherwise'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT c.payout_id AS payout_id, c.program_id AS program_id, c.partner_id AS partner_id, c.currency AS currency,
          c.amount_minor AS amount_minor, toDecimal64(c.amount_minor, 2) / 100 AS amount,
          multiIf(p.payout_id IS NOT NULL, 'paid', x.payout_id IS NOT NULL, 'canceled', 'pending') AS status,
          c.cutoff AS cutoff, length(c.commission_ids) AS commissions, c.commission_ids AS commission_ids,
          c.clawback_entry_ids AS clawback_entry_ids, c.manual_entry_ids AS manual_entry_ids, p.reference AS reference,
          c.created_at AS created_at, p.paid_at AS paid_at, x.canceled_at AS canceled_at
     FROM payout_created AS c FINAL
     LEFT JOIN (SELECT payout_id, reference, paid_at FROM payout_paid FINAL) AS p ON p.payout_id = c.payout_id
     LEFT JOIN (SELECT payout_id, canceled_at FROM payout_canceled FINAL) AS x ON x.payout_id = c.payout_id
    SETTINGS join_use_nulls = 1
COMMENT 'Payouts to partners: one row per payout, its current status';
