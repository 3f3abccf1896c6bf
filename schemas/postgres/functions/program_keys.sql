-- The tracking routes look the presented keys up in batches (domain/programs/api-keys.ts). As one
-- prepared statement, `key_hash = ANY ($1)` joined to programs was planned again for every batch
-- (a generic plan, priced for an array of ten, never beat a custom one for the batch's one or two
-- keys), and the plans hashed the programs table. Here each key is one lookup by the unique hash
-- and the program's primary key, whose plan the function keeps for the session (perf: about a
-- twelfth of PostgreSQL's CPU per sale before, docs/performance.md).
CREATE OR REPLACE FUNCTION program_keys(p_hashes text[])
RETURNS TABLE (key_hash text, program_id bigint, workspace_id bigint, rotation_marked_at timestamptz, rotation_deadline timestamptz)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  presented text;
BEGIN
  FOREACH presented IN ARRAY p_hashes LOOP
    RETURN QUERY
      SELECT k.key_hash, k.program_id, p.workspace_id, k.rotation_marked_at, k.rotation_deadline
        FROM program_api_keys k JOIN programs p ON p.id = k.program_id
       WHERE k.key_hash = presented;
  END LOOP;
END
$$;
