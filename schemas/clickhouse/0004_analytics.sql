-- The analytics schema: one view per fact, meant for people running ad-hoc SQL (npm run sql, the
-- read-only `analyst` user of docker-compose.yml). The views are the stable surface; the tables
-- of 0001-0003 stay free to change. Each view already collapses duplicates and versions (FINAL or
-- argMax inside), so an analyst never writes FINAL. Conventions (docs/analytics.md is generated
-- from the comments below: npm run docs:analytics):
--   money    <x>_minor Int64 (minor units) + currency + <x> Decimal(18, 2) (minor units / 100,
--            the project's convention for every currency, VND included)
--   times    DateTime64(6, 'UTC')
--   is_test  true for rows of test mode; most questions filter `WHERE NOT is_test`
-- SQL SECURITY DEFINER: a view reads the internal tables with the rights of the user that created
-- it (the migration's), so the analyst user needs SELECT on analytics.* only. Unqualified table
-- names are bound to the migration's database when a view is created.

CREATE DATABASE IF NOT EXISTS analytics COMMENT 'Views for analysts: one per fact, current state, documented in docs/analytics.md';

CREATE VIEW IF NOT EXISTS analytics.clicks (
  click_id          String COMMENT 'The click id returned by POST /api/v1/track/click',
  program_id        Int64 COMMENT 'The program of the referral link',
  partner_id        Nullable(Int64) COMMENT 'The partner of the referral link (NULL when the partner was deleted)',
  referral_link_id  Int64 COMMENT 'The referral link (aff code) that was clicked',
  clicked_at        DateTime64(6, 'UTC') COMMENT 'When the click was recorded (UTC)',
  is_test           Bool COMMENT 'A test click (additional_data.test_mode): counted nowhere in the dashboard'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT click_id, program_id, partner_id, referral_link_id, created_at AS clicked_at, test AS is_test
     FROM click_recorded FINAL
COMMENT 'One row per click';

CREATE VIEW IF NOT EXISTS analytics.customers (
  customer_id         Int64 COMMENT 'The customer (lead or paying customer) id',
  program_id          Int64 COMMENT 'The program the customer belongs to',
  partner_id          Nullable(Int64) COMMENT 'The partner the customer is attributed to (NULL: not attributed, or partner deleted)',
  partner_program_id  Nullable(Int64) COMMENT 'The partner-program record of the attribution',
  click_id            Nullable(String) COMMENT 'The click the customer came from (join analytics.clicks on click_id)',
  status              LowCardinality(String) COMMENT 'lead (signed up, not paid yet) or conversion (has paid at least once)',
  is_provisional      Bool COMMENT 'A browser-reported lead on a program that requires server-side leads, not yet confirmed',
  signup_at           Nullable(DateTime64(6, 'UTC')) COMMENT 'When the lead was tracked (UTC); NULL for a customer whose first event was a sale',
  first_purchase_at   Nullable(DateTime64(6, 'UTC')) COMMENT 'When the customer first paid (UTC); NULL while a lead',
  updated_at          DateTime64(6, 'UTC') COMMENT 'When this state of the customer was written (UTC)',
  is_test             Bool COMMENT 'A test lead or the customer of a test click'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT customer_id, program_id, partner_id, partner_program_id, click_id, status, provisional AS is_provisional,
          signup_date AS signup_at, first_purchase_date AS first_purchase_at, updated_at, test AS is_test
     FROM customers_current FINAL
COMMENT 'Leads and customers: one row per customer, its current state';

CREATE VIEW IF NOT EXISTS analytics.sales (
  sale_id            UUID COMMENT 'The sale id',
  transaction_id     String COMMENT 'The transaction id sent by the brand (unique)',
  program_id         Int64 COMMENT 'The program of the sale',
  customer_id        Nullable(Int64) COMMENT 'The paying customer (join analytics.customers)',
  partner_id         Nullable(Int64) COMMENT 'The partner the sale is attributed to (NULL: not attributed)',
  amount_minor       Int64 COMMENT 'The sale amount in minor units of currency (cents)',
  currency           LowCardinality(String) COMMENT 'ISO 4217 code of the amount: USD, EUR or VND',
  amount             Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  status             LowCardinality(String) COMMENT 'paid, refunded or chargeback (current state)',
  is_recurring       Bool COMMENT 'A recurring payment of a subscription (not the first payment)',
  occurred_at        DateTime64(6, 'UTC') COMMENT 'When the payment happened (UTC; may be back-dated by the brand)',
  status_changed_at  Nullable(DateTime64(6, 'UTC')) COMMENT 'When the sale was refunded or charged back (UTC); NULL while paid',
  is_test            Bool COMMENT 'A test-mode sale: counted nowhere in the dashboard'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT sale_id, transaction_id, program_id, customer_id, partner_id, amount_cents AS amount_minor, currency,
          toDecimal64(amount_cents, 2) / 100 AS amount,
          if(changed_status = '', recorded_status, changed_status) AS status, is_recurring,
          assumeNotNull(occurred_at) AS occurred_at, status_changed_at, test AS is_test
     FROM sales_current FINAL
    WHERE recorded_status != ''
COMMENT 'One row per sale, its current status';

CREATE VIEW IF NOT EXISTS analytics.refunds (
  refund_id       UUID COMMENT 'The refund id',
  sale_id         UUID COMMENT 'The refunded sale (join analytics.sales)',
  transaction_id  String COMMENT 'The transaction id of the refunded sale',
  program_id      Int64 COMMENT 'The program of the sale',
  partner_id      Nullable(Int64) COMMENT 'The partner the refunded sale was attributed to',
  reason          LowCardinality(String) COMMENT 'refund or chargeback',
  amount_minor    Int64 COMMENT 'The refunded amount in minor units (refunds are full: the sale amount)',
  currency        LowCardinality(String) COMMENT 'ISO 4217 code of the amount',
  amount          Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  refunded_at     DateTime64(6, 'UTC') COMMENT 'When the refund or chargeback was tracked (UTC)',
  is_test         Bool COMMENT 'The refund of a test-mode sale'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT r.refund_id AS refund_id, r.sale_id AS sale_id, r.transaction_id AS transaction_id, r.program_id AS program_id,
          s.partner_id AS partner_id, r.reason AS reason, s.amount_cents AS amount_minor, s.currency AS currency,
          toDecimal64(s.amount_cents, 2) / 100 AS amount, r.changed_at AS refunded_at, r.test AS is_test
     FROM sale_status_changed AS r FINAL
     LEFT JOIN (SELECT sale_id, partner_id, amount_cents, currency FROM sales_current FINAL WHERE recorded_status != '') AS s
       ON s.sale_id = r.sale_id
COMMENT 'Refunds and chargebacks: one row per refunded sale (at most one per sale)';

CREATE VIEW IF NOT EXISTS analytics.commissions (
  commission_id  UUID COMMENT 'The commission id',
  sale_id        UUID COMMENT 'The sale that earned it (join analytics.sales)',
  program_id     Int64 COMMENT 'The program of the sale',
  partner_id     Int64 COMMENT 'The partner who earned it',
  amount_minor   Int64 COMMENT 'The commission in minor units of currency',
  currency       LowCardinality(String) COMMENT 'ISO 4217 code of the amount (the sale currency)',
  amount         Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  status         LowCardinality(String) COMMENT 'pending, or reversed when its sale was refunded or charged back',
  created_at     DateTime64(6, 'UTC') COMMENT 'When the commission was created, with its sale (UTC)',
  reversed_at    Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was reversed (UTC); NULL while not reversed',
  is_test        Bool COMMENT 'A commission of a test-mode event'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT commission_id, any(sale_id) AS sale_id, any(program_id) AS program_id, argMax(partner_id, state) AS partner_id,
          argMax(amount_cents, state) AS amount_minor, argMax(currency, state) AS currency,
          toDecimal64(argMax(amount_cents, state), 2) / 100 AS amount,
          if(max(state) = 2, 'reversed', argMax(status, state)) AS status, min(created_at) AS created_at,
          if(max(state) = 2, maxIf(occurred_at, state = 2), NULL) AS reversed_at, max(test) AS is_test
     FROM (SELECT commission_id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at, occurred_at, test, 1 AS state
             FROM commission_created FINAL
           UNION ALL
           SELECT commission_id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at, occurred_at, test, 2 AS state
             FROM commission_reversed FINAL)
    GROUP BY commission_id
COMMENT 'Partner commissions: one row per commission, its current status';

CREATE VIEW IF NOT EXISTS analytics.platform_fees (
  platform_fee_id  UUID COMMENT 'The platform fee id',
  commission_id    UUID COMMENT 'The commission it is charged on (join analytics.commissions)',
  sale_id          UUID COMMENT 'The sale behind the commission',
  program_id       Int64 COMMENT 'The program charged',
  amount_minor     Int64 COMMENT 'The fee in minor units of currency (PLATFORM_FEE_BPS of the commission)',
  currency         LowCardinality(String) COMMENT 'ISO 4217 code of the amount',
  amount           Decimal(18, 2) COMMENT 'amount_minor / 100, in the units of currency',
  status           LowCardinality(String) COMMENT 'charged, or reversed with its commission',
  created_at       DateTime64(6, 'UTC') COMMENT 'When the fee was created (UTC)',
  reversed_at      Nullable(DateTime64(6, 'UTC')) COMMENT 'When it was reversed (UTC); NULL while charged',
  is_test          Bool COMMENT 'A fee of a test-mode event (none are created in test mode)'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT platform_fee_id, any(commission_id) AS commission_id, any(sale_id) AS sale_id, any(program_id) AS program_id,
          argMax(amount_cents, state) AS amount_minor, argMax(currency, state) AS currency,
          toDecimal64(argMax(amount_cents, state), 2) / 100 AS amount,
          if(max(state) = 2, 'reversed', 'charged') AS status, min(created_at) AS created_at,
          if(max(state) = 2, maxIf(occurred_at, state = 2), NULL) AS reversed_at, max(test) AS is_test
     FROM (SELECT platform_fee_id, commission_id, sale_id, program_id, amount_cents, currency, created_at, occurred_at, test, 1 AS state
             FROM platform_fee_created FINAL
           UNION ALL
           SELECT platform_fee_id, commission_id, sale_id, program_id, amount_cents, currency, created_at, occurred_at, test, 2 AS state
             FROM platform_fee_reversed FINAL)
    GROUP BY platform_fee_id
COMMENT 'Platform fees charged to programs: one row per fee, its current status';

CREATE VIEW IF NOT EXISTS analytics.partner_programs (
  partner_program_id  Int64 COMMENT 'The partner-program record id (a partner enrolled in a program)',
  program_id          Int64 COMMENT 'The program',
  partner_id          Nullable(Int64) COMMENT 'The partner (NULL when the partner account was deleted)',
  status              LowCardinality(String) COMMENT 'pending, approved, rejected or removed (current state)',
  created_at          DateTime64(6, 'UTC') COMMENT 'When the partner joined the program (UTC)',
  updated_at          DateTime64(6, 'UTC') COMMENT 'When the record last changed (UTC)',
  is_test             Bool COMMENT 'Written in test mode'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT partner_program_id, any(program_id) AS program_id,
          argMax(p_partner_id, (p_updated_at, p_occurred_at)) AS partner_id, argMax(p_status, (p_updated_at, p_occurred_at)) AS status,
          min(p_created_at) AS created_at, max(p_updated_at) AS updated_at, max(test) AS is_test
     FROM (SELECT partner_program_id, program_id, partner_id AS p_partner_id, status AS p_status, created_at AS p_created_at,
                  updated_at AS p_updated_at, occurred_at AS p_occurred_at, test
             FROM partner_program_changed FINAL)
    GROUP BY partner_program_id
COMMENT 'Partners enrolled in programs: one row per partner-program record, its current state';

CREATE VIEW IF NOT EXISTS analytics.test_events (
  tracking_log_id  Int64 COMMENT 'The test-event log id',
  program_id       Int64 COMMENT 'The program',
  event_type       LowCardinality(String) COMMENT 'click, lead or sale',
  entity_id        String COMMENT 'The click id, customer id or sale id of the test event',
  logged_at        DateTime64(6, 'UTC') COMMENT 'When the test event was tracked (UTC)',
  is_test          Bool COMMENT 'The test flag of the event (test events are written in test mode)'
) DEFINER = CURRENT_USER SQL SECURITY DEFINER
AS SELECT tracking_log_id, program_id, event_type, entity_id, created_at AS logged_at, test AS is_test
     FROM test_event_logged FINAL
COMMENT 'Test-mode events (the integration checklist reads these): one row per event';
