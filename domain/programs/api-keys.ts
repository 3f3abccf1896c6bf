import { sql, type Database } from '../../core/db.js';
import { createBatchedStatement } from '../batched-statement.js';
import { hashSecret, maskSecret, newProgramKey } from '../access/secrets.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';

export interface ProgramKey {
  programId: number;
  workspaceId: number;
  rotationMarkedAt: Date | null;
  rotationDeadline: Date | null;
}

const q = {
  byHash: sql(
    'api_keys.by_hash',
    `SELECT program_id AS "programId", workspace_id AS "workspaceId",
            rotation_marked_at AS "rotationMarkedAt", rotation_deadline AS "rotationDeadline"
       FROM program_keys(ARRAY[$1::text])`,
  ),
  byHashes: sql(
    'api_keys.by_hashes',
    // One indexed lookup per key, planned once per session (schemas/postgres/functions/program_keys.sql).
    `SELECT key_hash AS "keyHash", program_id AS "programId", workspace_id AS "workspaceId",
            rotation_marked_at AS "rotationMarkedAt", rotation_deadline AS "rotationDeadline"
       FROM program_keys($1::text[])`,
  ),
  // Replacing in place: the old hash is gone in the same statement, so the old key fails at once.
  upsert: sql(
    'api_keys.upsert',
    `INSERT INTO program_api_keys (program_id, key_hash, key_masked)
     VALUES ($1, $2, $3)
     ON CONFLICT (program_id) DO UPDATE
       SET key_hash = EXCLUDED.key_hash, key_masked = EXCLUDED.key_masked, created_at = now(),
           rotation_marked_at = NULL, rotation_deadline = NULL
     RETURNING key_masked AS "masked"`,
  ),
  masked: sql('api_keys.masked', `SELECT key_masked AS "masked" FROM program_api_keys WHERE program_id = $1 FOR UPDATE`),
  mark: sql(
    'api_keys.mark_rotation',
    `UPDATE program_api_keys SET rotation_marked_at = now(), rotation_deadline = $2
      WHERE program_id = $1
      RETURNING rotation_marked_at AS "markedAt", rotation_deadline AS "deadline"`,
  ),
};

export async function findProgramKey(db: Database, token: string): Promise<ProgramKey | undefined> {
  return db.one<ProgramKey>(q.byHash, [hashSecret(token)]);
}

/**
 * findProgramKey for the tracking routes: keys presented while an earlier lookup runs are looked
 * up together, one statement per batch (batched-statement.ts). Nothing is cached, so a regenerated
 * key fails at once.
 */
export function createProgramKeyFinder(db: Database): (token: string) => Promise<ProgramKey | undefined> {
  const find = createBatchedStatement<string, ProgramKey | undefined>(
    async (hashes) => {
      const rows = await db.many<ProgramKey & { keyHash: string }>(q.byHashes, [hashes]);
      const byHash = new Map(rows.map(({ keyHash, ...key }) => [keyHash, key]));
      return hashes.map((hash) => ({ ok: true, value: byHash.get(hash) }));
    },
    { maxBatch: 200, maxInFlight: db.kind === 'pglite' ? 1 : 4 },
  );
  return (token) => find(hashSecret(token));
}

/** Generates or regenerates the program's one key; the full value is returned only here. */
export async function issueProgramKey(db: Pick<Database, 'one'>, programId: number): Promise<{ apiKey: string; masked: string }> {
  const apiKey = newProgramKey();
  const row = await db.one<{ masked: string }>(q.upsert, [programId, hashSecret(apiKey), maskSecret(apiKey)]);
  return { apiKey, masked: row!.masked };
}

/**
 * A brand (re)generating its program's key: the key of issueProgramKey, and an audit entry with the
 * masked keys before and after (never the key or its hash).
 */
export async function regenerateProgramKey(db: Database, programId: number, by: AuditContext): Promise<{ apiKey: string; masked: string }> {
  return db.transaction(async (tx) => {
    const before = await tx.one<{ masked: string }>(q.masked, [programId]);
    const issued = await issueProgramKey(tx, programId);
    await recordAudit(tx, by, {
      action: 'program.api_key_generated',
      programId,
      target: { type: 'program', id: programId },
      before: before ? { api_token_masked: before.masked } : null,
      after: { api_token_masked: issued.masked },
    });
    return issued;
  });
}

export async function markKeyForRotation(db: Database, programId: number, deadline: Date) {
  return db.one<{ markedAt: Date; deadline: Date }>(q.mark, [programId, deadline.toISOString()]);
}
