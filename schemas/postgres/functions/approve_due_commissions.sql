-- The end of a commission's hold, written down (partner-program.md, "Commission lifecycle"): pending
-- commissions whose available_at has passed become approved, with their commission.approved event,
-- in the caller's transaction. Reads never wait for this (they show a pending commission past its
-- available_at as approved: commission_state); it makes the state and the event durable.
--
-- Called by the sweeper (processors/commission-sweeper.ts) for every program, and by a payout run
-- (create_payouts) for its own program. Reads the commissions whose hold is open (in_hold, 0065)
-- and due, and closes each: a pending one is approved; one that left pending meanwhile (reversed,
-- held, decided) keeps its state. Exactly once: a row moves only while it is in hold, under its row
-- lock; concurrent sweepers skip each other's rows. At most p_limit rows a call, oldest first; the
-- answer is how many holds it closed.
CREATE OR REPLACE FUNCTION approve_due_commissions(p_limit integer, p_program bigint) RETURNS integer LANGUAGE sql AS $$
  WITH due AS (
    SELECT id, status FROM commissions
     WHERE in_hold AND available_at <= now() AND (p_program IS NULL OR program_id = p_program)
     ORDER BY available_at
     LIMIT p_limit
       FOR UPDATE SKIP LOCKED
  ), closed AS (
    UPDATE commissions c
       SET in_hold = false,
           status = CASE WHEN due.status = 'pending' THEN 'approved' ELSE c.status END,
           approved_at = CASE WHEN due.status = 'pending' THEN c.available_at ELSE c.approved_at END
      FROM due WHERE c.id = due.id AND c.in_hold
    RETURNING c.*
  ), events AS (
    INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
    SELECT 'commission.approved', 'sale:' || a.sale_id, a.program_id, false, a.approved_at,
           commission_approved_event(ROW(a.*)::commissions, 'hold_end')
      FROM closed a JOIN due ON due.id = a.id AND due.status = 'pending'
     ORDER BY a.approved_at, a.id
  )
  SELECT count(*)::integer FROM closed
$$;
