-- Issue 31, point 5: commission.held (docs/decisions/fraud-review.md). A commission is held when a
-- fraud rule flags it as it is created (commission.created says held, and commission.held follows)
-- or when its partner is banned (a pending or approved one: commission.held alone). analytics.commissions
-- shows held from the latest hold until an owner's later approval (commission.approved by owner) or
-- rejection (commission.reversed); the columns and their meanings are 0007's.

CREATE TABLE IF NOT EXISTS commission_held (
  event_id       UUID,
  program_id     Int64,
  occurred_at    DateTime64(6, 'UTC'),
  test           Bool,
  commission_id  UUID,
  sale_id        UUID,
  partner_id     Int64,
  amount_cents   Int64,
  currency       LowCardinality(String),
  held_at        DateTime64(6, 'UTC'),
  reasons        Array(LowCardinality(String)),
  loaded_at      DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE OR REPLACE VIEW analytics.commissions (
  commission_id  UUID COMMENT 'The commission id',
  sale_id        UUID COMMENT 'The sale that earned it (join analytics.sales)',
  program_id     Int64 COMMENT 'The program of the sale',
  partner_id     Int64 COMMENT 'The partner who earned it',
  amount_minor   Int64 COMMENT 'The commission in minor units of currency: what is left after partial refunds of its sale before payment',
  currency       LowCardinality(String) COMMENT 'ISO 4217 code of the amount (the sale currency)',
  amount         Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  reversed_minor Int64 COMMENT 'What partial refunds of the sale took off the commission before payment, in minor units (0: none; after payment they are clawbacks in analytics.ledger_entries)',
  status         LowCardinality(String) COMMENT 'pending (inside its hold), held (flagged, waiting for review), approved (payable), processing (in a pending payout), paid, or reversed (its sale refunded in full or charged back before payment, or rejected)',
  created_at     DateTime64(6, 'UTC') COMMENT 'When the commission was created, with its sale (UTC)',
  approved_at    Nullable(DateTime64(6, 'UTC')) COMMENT 'When it became payable (UTC): its hold end, or an owner''s approval; NULL until then',
  payout_id      Nullable(UUID) COMMENT 'The payout that covers it, pending or paid (join analytics.payouts); NULL otherwise',
  paid_at        Nullable(DateTime64(6, 'UTC')) COMMENT 'When its payout was marked paid (UTC); NULL until then',
  reversed_at    Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was reversed (UTC); NULL while not reversed',
  is_test        Bool COMMENT 'A commission of a test-mode event'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT c.commission_id AS commission_id, c.sale_id AS sale_id, c.program_id AS program_id, c.partner_id AS partner_id,
          c.amount_minor AS amount_minor, c.currency AS currency, c.amount AS amount, c.reversed_minor AS reversed_minor,
          multiIf(c.status = 'reversed', 'reversed', p.paid_at IS NOT NULL, 'paid', p.payout_id IS NOT NULL, 'processing',
                  h.held_at IS NOT NULL AND (h.last_approved_at IS NULL OR h.last_approved_at < h.held_at), 'held',
                  a.approved_at IS NOT NULL OR c.status = 'approved', 'approved', c.status) AS status,
          c.created_at AS created_at, if(a.approved_at IS NOT NULL, a.approved_at, if(c.status = 'approved', c.created_at, NULL)) AS approved_at,
          if(c.status = 'reversed', NULL, p.payout_id) AS payout_id, if(c.status = 'reversed', NULL, p.paid_at) AS paid_at,
          c.reversed_at AS reversed_at, c.is_test AS is_test
     FROM (SELECT commission_id, any(sale_id) AS sale_id, any(program_id) AS program_id, argMax(partner_id, state) AS partner_id,
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
            GROUP BY commission_id) AS c
     LEFT JOIN (SELECT commission_id, min(approved_at) AS approved_at FROM commission_approved FINAL GROUP BY commission_id) AS a
       ON a.commission_id = c.commission_id
     -- The latest hold, and the latest approval (an owner's after the hold ends it).
     LEFT JOIN (SELECT h.commission_id AS commission_id, max(h.held_at) AS held_at, max(l.approved_at) AS last_approved_at
                  FROM commission_held AS h FINAL
                  LEFT JOIN (SELECT commission_id, approved_at FROM commission_approved FINAL) AS l ON l.commission_id = h.commission_id
                 GROUP BY h.commission_id) AS h
       ON h.commission_id = c.commission_id
     LEFT JOIN (SELECT arrayJoin(o.commission_ids) AS commission_id, argMax(o.payout_id, o.created_at) AS payout_id, max(x.paid_at) AS paid_at
                  FROM payout_created AS o FINAL
                  LEFT JOIN (SELECT payout_id, paid_at FROM payout_paid FINAL) AS x ON x.payout_id = o.payout_id
                 WHERE o.payout_id NOT IN (SELECT payout_id FROM payout_canceled FINAL)
                 GROUP BY commission_id) AS p
       ON p.commission_id = c.commission_id
    SETTINGS join_use_nulls = 1
COMMENT 'Partner commissions: one row per commission, its current status';
