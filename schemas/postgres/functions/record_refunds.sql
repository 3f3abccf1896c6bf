-- The common refunds of one batch (record_batch) in a few statements for the whole batch, rather
-- than record_refund's eight for each (docs/architecture.md, "Rules that exist only for speed";
-- docs/performance.md, "Refunds by the batch"). It writes exactly what record_refund would for the
-- same item, in the same order, and answers the same; it takes only the items whose outcome is
-- plain, and leaves the others (NULL in the answer) to record_refund, which the caller then runs:
-- - a real sale's refund or chargeback (the item's test not true; record_refund also looks the real
--   sale up first), the first item of the batch for its transaction (a repeat answers the first);
-- - the sale recorded and still paid (else: not found, a test sale, or refunded already);
-- - its commission still pending or held, so reversed with its fee (approved or paid ones need the
--   payout lock and may take a clawback; a sale without a commission is left too, to keep this short).
-- Sales and their commissions are locked in the sales' id order (a sale before its commission, as
-- record_refund), so that two batches wait for each other rather than deadlock; a statement that
-- fails undoes this function's writes and the caller runs every item alone.
CREATE OR REPLACE FUNCTION record_refunds(items jsonb) RETURNS jsonb[] LANGUAGE plpgsql AS $$
DECLARE
  answers jsonb[] := array_fill(NULL::jsonb, ARRAY[jsonb_array_length(items)]);
  -- The candidates, one element each, in the items' order; statuses: the sale's new status.
  sale_ids uuid[];
  positions int[];
  program_ids bigint[];
  reasons text[];
  refund_reasons text[];
  statuses text[];
  taken refunds[];
  reversed commissions[];
  fees platform_fees[];
  entries ledger_entries[];
  answer record;
BEGIN
  -- The candidates' sales and commissions, locked together (a sale without a commission is left).
  SELECT array_agg(c.id ORDER BY c.n), array_agg(c.n ORDER BY c.n), array_agg(c.program_id ORDER BY c.n),
         array_agg(c.reason ORDER BY c.n), array_agg(c.refund_reason ORDER BY c.n),
         array_agg(CASE c.reason WHEN 'refund' THEN 'refunded' ELSE 'chargeback' END ORDER BY c.n)
    INTO sale_ids, positions, program_ids, reasons, refund_reasons, statuses
    FROM (SELECT s.id, s.program_id, i.n, i.x->>'reason' AS reason, i.x->>'refund_reason' AS refund_reason, cm.status
            FROM (SELECT DISTINCT ON (x->>'program_id', x->>'transaction_id') x, n::int AS n
                    FROM jsonb_array_elements(items) WITH ORDINALITY AS a (x, n)
                   ORDER BY x->>'program_id', x->>'transaction_id', n) i
            JOIN sale_events s ON s.transaction_id = i.x->>'transaction_id' AND s.program_id = (i.x->>'program_id')::bigint AND NOT s.test
            JOIN commissions cm ON cm.sale_id = s.id
           WHERE (i.x->>'test')::boolean IS NOT TRUE AND s.status = 'paid'
           ORDER BY s.id
             FOR UPDATE OF s, cm) c
   WHERE c.status IN ('pending', 'held');
  IF sale_ids IS NULL THEN
    RETURN answers;
  END IF;

  WITH refund AS (
    INSERT INTO refunds (sale_id, program_id, reason, refund_reason)
    SELECT * FROM unnest(sale_ids, program_ids, reasons, refund_reasons)
    RETURNING *
  )
  SELECT array_agg(ROW(refund.*)::refunds ORDER BY p.k) INTO taken
    FROM refund JOIN unnest(sale_ids) WITH ORDINALITY AS p (sale_id, k) USING (sale_id);
  UPDATE sale_events s SET status = n.status, updated_at = now()
    FROM unnest(sale_ids, statuses) AS n (sale_id, status) WHERE s.id = n.sale_id;
  WITH cm AS (
    UPDATE commissions c SET status = 'reversed', reversed_at = now()
     WHERE c.sale_id = ANY (sale_ids) AND c.status IN ('pending', 'held')
    RETURNING c.*
  )
  SELECT array_agg(ROW(cm.*)::commissions) INTO reversed FROM cm;
  WITH fee AS (
    UPDATE platform_fees f SET status = 'reversed', reversed_at = now()
     WHERE f.sale_id IN (SELECT c.sale_id FROM unnest(reversed) c) AND f.status = 'charged'
    RETURNING f.*
  )
  SELECT array_agg(ROW(fee.*)::platform_fees) INTO fees FROM fee;
  -- The reversal entries (a zero commission has none), in the items' order.
  WITH entry AS (
    INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
    SELECT c.program_id, c.partner_id, 'reversal', -c.amount_cents, c.currency, c.id, c.sale_id, 'refund:' || r.id, r.created_at, r.created_at
      FROM unnest(taken) WITH ORDINALITY AS r
      JOIN unnest(reversed) c ON c.sale_id = r.sale_id
     WHERE c.amount_cents > 0
     ORDER BY r.ordinality
    RETURNING *
  )
  SELECT array_agg(ROW(entry.*)::ledger_entries) INTO entries FROM entry;

  -- The events: each sale's in record_refund's order, the sales in the items' order.
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  SELECT event_type, 'sale:' || sale_id, program_id, false, occurred_at, payload
    FROM (
      SELECT r.ordinality, 1 AS step, 'sale.status_changed' AS event_type, r.sale_id, r.program_id, r.created_at AS occurred_at,
             jsonb_build_object('sale_id', r.sale_id, 'transaction_id', items->(positions[r.ordinality] - 1)->>'transaction_id',
                                'program_id', r.program_id, 'status', statuses[r.ordinality],
                                'reason', r.reason, 'refund_id', r.id, 'changed_at', r.created_at) AS payload
        FROM unnest(taken) WITH ORDINALITY AS r
      UNION ALL
      SELECT r.ordinality, 2, 'commission.reversed', r.sale_id, r.program_id, c.reversed_at, commission_reversed_event(c, e)
        FROM unnest(taken) WITH ORDINALITY AS r
        JOIN unnest(reversed) c ON c.sale_id = r.sale_id
        LEFT JOIN unnest(entries) e ON e.sale_id = r.sale_id
      UNION ALL
      SELECT r.ordinality, 3, 'platform_fee.reversed', r.sale_id, r.program_id, c.reversed_at, platform_fee_event(f, c)
        FROM unnest(taken) WITH ORDINALITY AS r
        JOIN unnest(reversed) c ON c.sale_id = r.sale_id
        JOIN unnest(fees) f ON f.sale_id = r.sale_id
    ) event
   ORDER BY ordinality, step;

  FOR answer IN
    SELECT positions[r.ordinality] AS n, statuses[r.ordinality] AS status, r.id, r.sale_id, r.reason, r.created_at,
           c.id IS NOT NULL AS commission_reversed
      FROM unnest(taken) WITH ORDINALITY AS r
      LEFT JOIN unnest(reversed) c ON c.sale_id = r.sale_id
  LOOP
    answers[answer.n] := jsonb_build_object('refund_id', answer.id, 'sale_id', answer.sale_id,
      'transaction_id', items->(answer.n - 1)->>'transaction_id', 'reason', answer.reason,
      'sale_status', answer.status,
      'commission_reversed', answer.commission_reversed, 'created_at', answer.created_at, 'recorded', true);
  END LOOP;
  RETURN answers;
END
$$;
