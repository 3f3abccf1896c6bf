-- A payout run (partner-program.md, "Payouts"; docs/decisions/ledger.md): one payout per partner and
-- currency whose approved balance as of p_cutoff is at least the program's payout_minimum_minor. The
-- approved balance: the approved commissions approved by the cutoff that no pending payout covers,
-- plus the clawback and manual entries made by then that no live payout nets yet. A payout records
-- the commissions it covers in commission_ids (they read as processing from then on:
-- commission_state) and nets its entries (ledger_settlements); each payout gets its payout.created.
--
-- Concurrency: the program's payout lock (lock_payouts), held alone, makes runs of one program take
-- turns (a second call waits, then finds the first's commissions covered) and keeps refunds and
-- rejections of approved commissions, which take it shared, from deciding meanwhile. p_key (the
-- Idempotency-Key): the same key answers the first run's payouts again and makes none.
--
-- Set-based and writing no commission row: a few statements whatever the number of commissions
-- (bench/payouts.ts: 1,000,000 commissions of 10,000 partners). work_mem for its sorts and hashes;
-- no JIT, whose compilation cost more than it saved here.
-- Answers {"run_id", "payout_ids", "replayed"}.
CREATE OR REPLACE FUNCTION create_payouts(p_program bigint, p_cutoff timestamptz, p_key text) RETURNS jsonb LANGUAGE plpgsql
SET work_mem = '64MB' SET jit = off AS $$
DECLARE
  run payout_runs;
  minimum bigint;
  made uuid[];
BEGIN
  PERFORM lock_payouts(p_program, false);
  IF p_key IS NOT NULL THEN
    SELECT * INTO run FROM payout_runs WHERE program_id = p_program AND idempotency_key = p_key;
    IF FOUND THEN
      RETURN jsonb_build_object('run_id', run.id, 'payout_ids', to_jsonb(run.payout_ids), 'replayed', true);
    END IF;
  END IF;
  -- Holds that ended by now are written down first (with their events), so the run sees them approved.
  PERFORM approve_due_commissions(2147483647, p_program);
  SELECT payout_minimum_minor INTO minimum FROM programs WHERE id = p_program;
  INSERT INTO payout_runs (program_id, idempotency_key, cutoff) VALUES (p_program, p_key, p_cutoff) RETURNING * INTO run;

  WITH ent AS (
    SELECT e.id, e.partner_id, e.currency, e.kind, e.amount_minor
      FROM ledger_entries e
     WHERE e.program_id = p_program AND e.kind IN ('clawback', 'manual') AND e.created_at <= p_cutoff
       AND NOT EXISTS (SELECT 1 FROM ledger_settlements s WHERE s.entry_id = e.id)
  ), ent_sum AS (
    SELECT partner_id, currency, sum(amount_minor) AS amount FROM ent GROUP BY partner_id, currency
  ), covered AS (
    SELECT unnest(commission_ids) AS id FROM payouts WHERE program_id = p_program AND status = 'pending'
  ), comm AS (
    SELECT c.id, c.partner_id, c.currency, c.amount_cents FROM commissions c
     WHERE c.program_id = p_program AND c.status = 'approved' AND c.approved_at <= p_cutoff
       AND NOT EXISTS (SELECT 1 FROM covered v WHERE v.id = c.id)
  ), comm_sum AS (
    -- One pass: each partner's and currency's sum and the ids it would cover.
    SELECT partner_id, currency, sum(amount_cents) AS amount, array_agg(id ORDER BY id) AS ids FROM comm GROUP BY partner_id, currency
  ), eligible AS (
    SELECT COALESCE(c.partner_id, e.partner_id) AS partner_id, COALESCE(c.currency, e.currency) AS currency,
           COALESCE(c.amount, 0) + COALESCE(e.amount, 0) AS amount, c.ids, gen_random_uuid() AS payout_id
      FROM comm_sum c FULL JOIN ent_sum e ON e.partner_id = c.partner_id AND e.currency = c.currency
     WHERE COALESCE(c.amount, 0) + COALESCE(e.amount, 0) >= minimum
  ), net AS (
    SELECT g.payout_id, array_agg(e.id ORDER BY e.id) FILTER (WHERE e.kind = 'clawback') AS clawbacks,
           array_agg(e.id ORDER BY e.id) FILTER (WHERE e.kind = 'manual') AS manuals
      FROM eligible g JOIN ent e ON e.partner_id = g.partner_id AND e.currency = g.currency
     GROUP BY g.payout_id
  ), inserted AS (
    INSERT INTO payouts (id, program_id, partner_id, run_id, currency, amount_minor, cutoff, commission_ids, clawback_entry_ids, manual_entry_ids)
    SELECT g.payout_id, p_program, g.partner_id, run.id, g.currency, g.amount, p_cutoff,
           COALESCE(g.ids, '{}'), COALESCE(n.clawbacks, '{}'), COALESCE(n.manuals, '{}')
      FROM eligible g LEFT JOIN net n ON n.payout_id = g.payout_id
     ORDER BY g.partner_id, g.currency
    RETURNING *
  ), netted AS (
    INSERT INTO ledger_settlements (entry_id, payout_id)
    SELECT u.id, m.id FROM inserted m CROSS JOIN LATERAL unnest(m.clawback_entry_ids || m.manual_entry_ids) AS u (id)
    RETURNING entry_id
  ), events AS (
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT 'payout.created', 'partner:' || m.partner_id, m.program_id, false, m.created_at, payout_event(ROW(m.*)::payouts)
      FROM inserted m ORDER BY m.partner_id, m.currency
    RETURNING id
  )
  SELECT COALESCE(array_agg(m.id ORDER BY m.partner_id, m.currency), '{}') INTO made FROM inserted m;
  UPDATE payout_runs SET payout_ids = made WHERE id = run.id;
  RETURN jsonb_build_object('run_id', run.id, 'payout_ids', to_jsonb(made), 'replayed', false);
END
$$;
