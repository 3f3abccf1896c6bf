-- A test-mode event: what the integration checklist and readiness count (as domain/tracking/test-events.ts).
CREATE OR REPLACE FUNCTION log_test_event(p_program_id bigint, p_event_type text, p_entity_id text) RETURNS void LANGUAGE sql AS $$
  WITH entry AS (
    INSERT INTO tracking_logs (program_id, event_type, entity_id) VALUES (p_program_id, p_event_type, p_entity_id)
    RETURNING id, program_id, event_type, entity_id, created_at
  )
  INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
  SELECT 'test_event.logged', program_id::text, program_id, true, created_at,
         jsonb_build_object('tracking_log_id', id, 'program_id', program_id, 'event_type', event_type,
                            'entity_id', entity_id, 'created_at', created_at)
    FROM entry
$$;
