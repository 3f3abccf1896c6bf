-- The pending payout that covers an approved commission, or NULL (see commission_state).
CREATE OR REPLACE FUNCTION commission_payout(cm commissions) RETURNS uuid LANGUAGE sql STABLE AS $$
  SELECT p.id FROM payouts p
   WHERE p.program_id = cm.program_id AND p.partner_id = cm.partner_id AND p.status = 'pending' AND cm.id = ANY (p.commission_ids)
   LIMIT 1
$$;
