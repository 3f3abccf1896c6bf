-- The programs of a workspace connected to a processor account and not deauthorized since.
CREATE OR REPLACE FUNCTION account_programs(p_account text, p_workspace bigint) RETURNS bigint[] LANGUAGE sql STABLE AS $$
  SELECT array_agg(c.program_id ORDER BY c.program_id)
    FROM processor_connections c
    JOIN programs p ON p.id = c.program_id
    LEFT JOIN processor_accounts a ON a.account_id = c.account_id
   WHERE c.account_id = p_account AND p.workspace_id = p_workspace
     AND (a.deauthorized_at IS NULL OR a.deauthorized_at < c.connected_at)
$$;
