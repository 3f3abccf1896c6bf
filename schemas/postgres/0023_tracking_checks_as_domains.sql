-- The CHECK constraints of the tables every lead, sale and refund writes become domains. A table's
-- CHECK constraints are read back from their stored text and planned again by every statement
-- that inserts or updates a row (ExecRelCheck), all of them even when the statement changes one
-- column: a refund's three updates and one insert did that eleven times, about a twelfth of its
-- PostgreSQL CPU (perf: ExecConstraints, stringToNode). A domain's check is planned once per
-- connection (the type cache) and runs only for the columns a statement assigns. The rules are
-- the same; a violation is still SQLSTATE 23514, now named after the domain.
CREATE DOMAIN cents AS bigint CHECK (VALUE >= 0);
CREATE DOMAIN sale_currency AS text CHECK (VALUE IN ('USD', 'EUR', 'VND'));
CREATE DOMAIN sale_status AS text CHECK (VALUE IN ('paid', 'refunded', 'chargeback'));
CREATE DOMAIN customer_status AS text CHECK (VALUE IN ('lead', 'conversion'));
CREATE DOMAIN commission_status AS text CHECK (VALUE IN ('pending', 'reversed'));
CREATE DOMAIN platform_fee_status AS text CHECK (VALUE IN ('charged', 'reversed'));
CREATE DOMAIN refund_kind AS text CHECK (VALUE IN ('refund', 'chargeback'));

ALTER TABLE sale_events
  DROP CONSTRAINT sale_events_amount_cents_check,
  DROP CONSTRAINT sale_events_refunded_cents_check,
  DROP CONSTRAINT sale_events_currency_check,
  DROP CONSTRAINT sale_events_status_check,
  ALTER COLUMN amount_cents TYPE cents,
  ALTER COLUMN refunded_cents TYPE cents,
  ALTER COLUMN currency TYPE sale_currency,
  ALTER COLUMN status TYPE sale_status;

ALTER TABLE customers
  DROP CONSTRAINT customers_status_check,
  ALTER COLUMN status TYPE customer_status;

ALTER TABLE commissions
  DROP CONSTRAINT commissions_amount_cents_check,
  DROP CONSTRAINT commissions_reversed_cents_check,
  DROP CONSTRAINT commissions_status_check,
  ALTER COLUMN amount_cents TYPE cents,
  ALTER COLUMN reversed_cents TYPE cents,
  ALTER COLUMN status TYPE commission_status;

ALTER TABLE platform_fees
  DROP CONSTRAINT platform_fees_amount_cents_check,
  DROP CONSTRAINT platform_fees_reversed_cents_check,
  DROP CONSTRAINT platform_fees_status_check,
  ALTER COLUMN amount_cents TYPE cents,
  ALTER COLUMN reversed_cents TYPE cents,
  ALTER COLUMN status TYPE platform_fee_status;

ALTER TABLE refunds
  DROP CONSTRAINT refunds_reason_check,
  ALTER COLUMN reason TYPE refund_kind;

-- A connection that ran a PL/pgSQL function before this migration keeps that function's compiled
-- plans, whose parameters still carry the old column types: its next call would fail with "type
-- of parameter ... does not match that when preparing the plan". This migration ended by rewriting
-- every such function's catalog row so each connection compiles it again; core/migrate.ts now does
-- that after any numbered migration, by applying every file of functions/ again.
