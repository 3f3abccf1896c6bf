-- The end of a commission's hold, written down (partner-program.md, "Commission lifecycle"): pending
-- commissions whose available_at has passed become approved, with their commission.approved event,
-- in the caller's transaction. Reads never wait for this (they show a pending commission past its
-- available_at as approved: commission_state); it makes the state and the event durable.
--
-- Called by the sweeper (processors/commission-sweeper.ts) for every program, and by a payout run
-- (create_payouts) for its own program. Exactly once: a row moves only while it is pending, under
-- its row lock; concurrent sweepers skip each other's rows. At most p_limit rows a call, oldest
-- first; the answer is how many moved.
CREATE OR REPLACE FUNCTION approve_due_commissions(p_limit integer, p_program bigint) RETURNS integer LANGUAGE sql AS $$
  WITH due AS (
    SELECT id FROM commissions
     WHERE status = 'pending' AND available_at <= now() AND (p_program IS NULL OR program_id = p_program)
     ORDER BY available_at
     LIMIT p_limit
       FOR UPDATE SKIP LOCKED
  ), approved AS (
    UPDATE commissions c SET status = 'approved', approved_at = c.available_at
      FROM due WHERE c.id = due.id AND c.status = 'pending'
    RETURNING c.*
  ), events AS (
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT 'commission.approved', 'sale:' || a.sale_id, a.program_id, false, a.approved_at,
           commission_approved_event(ROW(a.*)::commissions, 'hold_end')
      FROM approved a
     ORDER BY a.approved_at, a.id
    RETURNING 1
  )
  SELECT count(*)::integer FROM events
$$;
