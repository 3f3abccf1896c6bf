-- Issue 34: the commission lifecycle and the append-only ledger (partner-program.md, "Commission
-- lifecycle" and "Ledger"; docs/decisions/ledger.md). The rules are in functions/: record_sale,
-- record_refund, record_partial_refund, approve_due_commissions, decide_commission, create_payouts;
-- append-only is enforced by the trigger of functions/refuse_changes_to_append_only_table.sql.

-- Program settings: the hold before a commission is payable, and the smallest payout (per currency:
-- each currency's balance is compared with it on its own).
ALTER TABLE programs
  ADD COLUMN commission_hold_days integer NOT NULL DEFAULT 30 CHECK (commission_hold_days BETWEEN 0 AND 365),
  ADD COLUMN payout_minimum_minor bigint NOT NULL DEFAULT 5000 CHECK (payout_minimum_minor BETWEEN 1 AND 100000000000);

-- The states of the contract. Existing rows are pending or reversed, both still valid.
ALTER DOMAIN commission_status DROP CONSTRAINT commission_status_check;
ALTER DOMAIN commission_status ADD CONSTRAINT commission_status_check
  CHECK (VALUE IN ('pending', 'held', 'approved', 'processing', 'paid', 'reversed'));

-- available_at: creation + the program's hold; a pending commission past it reads as approved at
-- once, and the sweeper (processors/commission-sweeper.ts) writes the approval later.
-- approved_at: when it became approved (its available_at for the hold's end, the owner's time for an
-- approval). payout_id: the payout that covers it while processing or paid. status_reason: the
-- owner's reason for an approval or a rejection.
ALTER TABLE commissions
  ADD COLUMN available_at timestamptz,
  ADD COLUMN approved_at timestamptz,
  ADD COLUMN paid_at timestamptz,
  ADD COLUMN payout_id uuid,
  ADD COLUMN status_reason text;
UPDATE commissions c SET available_at = c.created_at + p.commission_hold_days * interval '1 day'
  FROM programs p WHERE p.id = c.program_id;
ALTER TABLE commissions ALTER COLUMN available_at SET NOT NULL;
-- The sweeper's work: pending commissions by the end of their hold. Only pending rows are in it.
CREATE INDEX commissions_due ON commissions (available_at) WHERE status = 'pending';

-- What partial refunds of a paid (or processing) commission's sale clawed back: the commission itself
-- is never edited once paid (record_partial_refund).
ALTER TABLE partial_refunds ADD COLUMN commission_clawback_cents bigint NOT NULL DEFAULT 0;

CREATE DOMAIN ledger_kind AS text CHECK (VALUE IN ('commission', 'adjustment', 'reversal', 'clawback', 'payout', 'manual'));

-- Every money movement of a partner in a program: one row, never updated or deleted (the trigger).
-- cause: what made it, unique, so a retried request, a redelivered webhook or a replay can never
-- write a second entry: sale:<sale id> (commission), refund:<refund id> (reversal or clawback of a
-- full refund or chargeback), partial_refund:<partial refund id> (adjustment or clawback),
-- reject:<commission id> (reversal), payout:<payout id>, manual:<program>:<partner>:<idempotency key>.
-- No foreign keys, as the other tables the sale path writes (0022): the functions take every id from
-- rows they hold locked. rule_version: the commission rule version (issue 30), NULL until then.
CREATE TABLE ledger_entries (
  id             bigserial PRIMARY KEY,
  program_id     bigint NOT NULL,
  partner_id     bigint NOT NULL,
  kind           ledger_kind NOT NULL,
  amount_minor   bigint NOT NULL,
  currency       sale_currency NOT NULL,
  commission_id  uuid,
  sale_id        uuid,
  payout_id      uuid,
  cause          text NOT NULL,
  rule_version   integer,
  reason         text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  available_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT ledger_entries_cause_key UNIQUE (cause),
  -- The sign of each kind: commissions add, manual entries either way, the rest take off.
  CONSTRAINT ledger_entries_sign CHECK (CASE kind WHEN 'commission' THEN amount_minor > 0
                                                  WHEN 'manual' THEN amount_minor <> 0
                                                  ELSE amount_minor < 0 END)
);
-- A partner's ledger pages and balances; a statement reads every entry of the program up to its
-- end (the opening balance is all that came before), so it needs no index by time.
CREATE INDEX ledger_entries_partner ON ledger_entries (program_id, partner_id, id);
-- The entries a payout nets (clawbacks and manual entries): few, so a small index.
CREATE INDEX ledger_entries_nettable ON ledger_entries (program_id, id) WHERE kind IN ('clawback', 'manual');

-- The ledger of the commissions recorded before this migration, as the functions would have written
-- it: the commission as first earned, one adjustment per partial refund, the reversal of what was
-- left for a refunded sale; each with its ledger_entry.recorded event (the payload of
-- functions/ledger_entry_event.sql, written out here: a migration calls no function of ours).
INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
SELECT c.program_id, c.partner_id, 'commission', c.amount_cents + c.reversed_cents, c.currency, c.id, c.sale_id,
       'sale:' || c.sale_id, c.created_at, c.available_at
  FROM commissions c
 WHERE c.amount_cents + c.reversed_cents > 0
 ORDER BY c.created_at, c.id;
INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
SELECT c.program_id, c.partner_id, 'adjustment', -pr.commission_reversed_cents, c.currency, c.id, c.sale_id,
       'partial_refund:' || pr.id, pr.created_at, pr.created_at
  FROM partial_refunds pr JOIN commissions c ON c.sale_id = pr.sale_id
 WHERE pr.commission_reversed_cents > 0
 ORDER BY pr.created_at, pr.id;
INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
SELECT c.program_id, c.partner_id, 'reversal', -c.amount_cents, c.currency, c.id, c.sale_id,
       COALESCE('refund:' || r.id, 'reversal:' || c.id), COALESCE(c.reversed_at, c.created_at), COALESCE(c.reversed_at, c.created_at)
  FROM commissions c LEFT JOIN refunds r ON r.sale_id = c.sale_id
 WHERE c.status = 'reversed' AND c.amount_cents > 0
 ORDER BY c.reversed_at, c.id;
INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
SELECT 'ledger_entry.recorded', 'partner:' || e.partner_id, e.program_id, false, e.created_at,
       jsonb_build_object('entry_id', e.id, 'program_id', e.program_id, 'partner_id', e.partner_id, 'kind', e.kind,
                          'amount_minor', e.amount_minor, 'currency', e.currency, 'commission_id', e.commission_id,
                          'sale_id', e.sale_id, 'payout_id', e.payout_id, 'cause', e.cause, 'rule_version', e.rule_version,
                          'reason', e.reason, 'created_at', e.created_at, 'available_at', e.available_at)
  FROM ledger_entries e
 ORDER BY e.id;
