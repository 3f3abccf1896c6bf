import { sql, type Database, type Queryable } from '../../core/db.js';
import { AGENT_SCOPES, isAgentScope, type AgentScope } from './access.js';
import { hashSecret, maskSecret, newAgentKey } from './secrets.js';

/** A live agent key as the authentication module sees it. */
export interface AgentKey {
  id: number;
  workspaceId: number;
  scopes: AgentScope[];
}

export interface AgentKeyView {
  id: number;
  workspace_id: number;
  name: string;
  key_masked: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** last_used_at is written at most this often per key: one extra UPDATE a minute, not one per call. */
const LAST_USED_RESOLUTION_MS = 60_000;

const q = {
  byHash: sql(
    'agent_keys.by_hash',
    `SELECT id, workspace_id AS "workspaceId", scopes,
            (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2)) AS stale
       FROM agent_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
  ),
  // Conditional, so concurrent requests of one key write at most one row version a minute.
  touch: sql(
    'agent_keys.touch',
    `UPDATE agent_keys SET last_used_at = now()
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))`,
  ),
  insert: sql(
    'agent_keys.insert',
    `INSERT INTO agent_keys (workspace_id, name, key_hash, key_masked, scopes) VALUES ($1, $2, $3, $4, $5)
     RETURNING id`,
  ),
  revoke: sql(
    'agent_keys.revoke',
    `UPDATE agent_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING revoked_at AS "revokedAt"`,
  ),
  list: sql(
    'agent_keys.list',
    `SELECT id, workspace_id, name, key_masked, scopes, created_at, last_used_at, revoked_at
       FROM agent_keys WHERE workspace_id = $1 ORDER BY id`,
  ),
  workspace: sql('agent_keys.workspace_exists', `SELECT 1 AS found FROM workspaces WHERE id = $1`),
};

/**
 * The live key a token names, or undefined (unknown or revoked). One lookup by the unique hash;
 * when last_used_at is more than a minute old, one conditional UPDATE as well.
 */
export async function findAgentKey(db: Database, token: string): Promise<AgentKey | undefined> {
  // Only agt_ keys are looked up: a program key or session token is no agent key, whatever its hash.
  if (!token.startsWith('agt_')) return undefined;
  const seconds = LAST_USED_RESOLUTION_MS / 1000;
  const row = await db.one<{ id: number; workspaceId: number; scopes: string[]; stale: boolean }>(q.byHash, [hashSecret(token), seconds]);
  if (!row) return undefined;
  if (row.stale) await db.many(q.touch, [row.id, seconds]);
  return { id: Number(row.id), workspaceId: Number(row.workspaceId), scopes: row.scopes.filter(isAgentScope) };
}

class AgentKeyInputError extends Error {}

/** Scopes from an operator's list: `all`, or comma-separated names of AGENT_SCOPES. */
export function parseScopes(list: string): AgentScope[] {
  if (list.trim() === 'all') return [...AGENT_SCOPES];
  const names = [...new Set(list.split(',').map((s) => s.trim()).filter(Boolean))];
  const unknown = names.filter((n) => !isAgentScope(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new AgentKeyInputError(`unknown scope${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}; valid: all, ${AGENT_SCOPES.join(', ')}`);
  }
  return names as AgentScope[];
}

/** Issues a key; the full value is returned only here (the database keeps its hash). */
export async function issueAgentKey(db: Queryable, workspaceId: number, name: string, scopes: readonly AgentScope[]) {
  if (!(await db.one(q.workspace, [workspaceId]))) throw new AgentKeyInputError(`workspace ${workspaceId} does not exist`);
  if (scopes.length === 0) throw new AgentKeyInputError('an agent key needs at least one scope');
  const agentKey = newAgentKey();
  const { id } = (await db.one<{ id: number }>(q.insert, [workspaceId, name, hashSecret(agentKey), maskSecret(agentKey), scopes]))!;
  return { id: Number(id), agentKey, scopes: [...scopes] };
}

/** Revokes at once (the next request with the key is 401); undefined for an unknown key id. */
export async function revokeAgentKey(db: Queryable, keyId: number): Promise<Date | undefined> {
  return (await db.one<{ revokedAt: Date }>(q.revoke, [keyId]))?.revokedAt;
}

export async function listAgentKeys(db: Queryable, workspaceId: number): Promise<AgentKeyView[]> {
  return db.many<AgentKeyView>(q.list, [workspaceId]);
}
