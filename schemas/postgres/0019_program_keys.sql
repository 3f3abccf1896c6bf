-- The tracking routes look the presented keys up in batches (ingest/domain/api-keys.ts). As a
-- prepared statement, `key_hash = ANY ($1)` never got a generic plan: the planner prices a generic
-- plan for an array of ten, and a custom one for the batch's one or two keys is always cheaper,
-- so every lookup was planned again (about a twentieth of PostgreSQL's CPU per sale, perf). In a
-- function the lookup's plan is kept for the session.
CREATE FUNCTION program_keys(p_hashes text[])
RETURNS TABLE (key_hash text, program_id bigint, workspace_id bigint, rotation_marked_at timestamptz, rotation_deadline timestamptz)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
    SELECT k.key_hash, k.program_id, p.workspace_id, k.rotation_marked_at, k.rotation_deadline
      FROM program_api_keys k JOIN programs p ON p.id = k.program_id
     WHERE k.key_hash = ANY (p_hashes);
END
$$;
