import type { SecretBox } from '../../core/secret-box.js';
import { sql, type Database, type Queryable, type Transaction } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';

/**
 * Which workspace a processor account belongs to (issue 27, point 3; schemas/postgres/0024). A
 * workspace owner connects a program with the account id and the signing secret of the webhook
 * endpoint the brand created in its own processor dashboard; that endpoint posts to the account's
 * own URL, whose first valid event verifies the claim. A verified account cannot be connected by
 * another workspace; an unverified claim can be replaced (nobody holds an account id by typing it).
 */

/** The previous secret stays valid this long after a rotation, as the processor's own rolling does. */
export const PREVIOUS_SECRET_HOURS = 24;

const q = {
  claimNew: sql(
    'processor_account_owners.claim_new',
    `INSERT INTO processor_account_owners (account_id, workspace_id, secret) VALUES ($1, $2, $3)
     ON CONFLICT (account_id) DO NOTHING RETURNING account_id`,
  ),
  lock: sql(
    'processor_account_owners.lock',
    `SELECT workspace_id, secret, verified_at IS NOT NULL AS verified FROM processor_account_owners WHERE account_id = $1 FOR UPDATE`,
  ),
  takeOver: sql(
    'processor_account_owners.take_over',
    `UPDATE processor_account_owners SET workspace_id = $2, secret = $3, previous_secret = NULL, previous_until = NULL,
            claim = gen_random_uuid(), claimed_at = now(), verified_at = NULL
      WHERE account_id = $1`,
  ),
  rotate: sql(
    'processor_account_owners.rotate',
    `UPDATE processor_account_owners SET previous_secret = secret, previous_until = $3, secret = $2 WHERE account_id = $1`,
  ),
  // The program's connection before this change, locked: its account may be released after.
  connectionOf: sql('processor_connections.of_program', `SELECT account_id FROM processor_connections WHERE program_id = $1 FOR UPDATE`),
  connect: sql(
    'processor_connections.connect',
    `INSERT INTO processor_connections (program_id, account_id) VALUES ($1, $2)
     ON CONFLICT (program_id) DO UPDATE SET account_id = EXCLUDED.account_id, connected_at = now()`,
  ),
  disconnect: sql('processor_connections.disconnect', `DELETE FROM processor_connections WHERE program_id = $1 RETURNING account_id`),
  // A workspace that no longer connects any program to the account gives it up.
  release: sql(
    'processor_account_owners.release',
    `DELETE FROM processor_account_owners o
      WHERE o.account_id = $1 AND o.workspace_id = $2
        AND NOT EXISTS (SELECT 1 FROM processor_connections c JOIN programs p ON p.id = c.program_id
                         WHERE c.account_id = $1 AND p.workspace_id = $2)
      RETURNING account_id`,
  ),
  // The operator's ruling on a disputed account: the claim and its workspace's connections to it go.
  forceRelease: sql(
    'processor_account_owners.force_release',
    `WITH owner AS (DELETE FROM processor_account_owners WHERE account_id = $1 RETURNING workspace_id),
          dropped AS (DELETE FROM processor_connections c USING programs p, owner
                        WHERE c.account_id = $1 AND p.id = c.program_id AND p.workspace_id = owner.workspace_id RETURNING c.program_id)
     SELECT (SELECT workspace_id FROM owner) AS workspace_id, (SELECT count(*) FROM dropped)::int AS programs`,
  ),
  // What the account's own URL reported under a claim given up (capabilities, deauthorization)
  // came through that claimant's secret: the next claimant does not inherit it.
  forget: sql('processor_accounts.forget', `DELETE FROM processor_accounts WHERE account_id = $1`),
  signing: sql(
    'processor_account_owners.signing',
    `SELECT workspace_id, claim, verified_at IS NOT NULL AS verified, secret, previous_secret, previous_until
       FROM processor_account_owners WHERE account_id = $1`,
  ),
  verify: sql(
    'processor_account_owners.verify',
    `UPDATE processor_account_owners SET verified_at = now() WHERE account_id = $1 AND claim = $2 AND verified_at IS NULL`,
  ),
  scope: sql(
    'processor_account_owners.scope',
    `SELECT w AS workspace, coalesce(account_programs($1, w), '{}') AS programs FROM account_workspace($1, $2::jsonb) AS w`,
  ),
};

/** What binds a sealed secret to its account: a sealed value moved to another row does not open. */
const context = (accountId: string) => `processor-webhook-secret:${accountId}`;

export interface ConnectInput {
  programId: number;
  workspaceId: number;
  accountId: string;
  webhookSecret: string;
  /** When the previous secret stops being accepted, if this is a rotation. */
  previousUntil: Date;
}

/** taken: another workspace verified the account; nothing was written. */
export type ConnectOutcome = 'connected' | 'taken';

/**
 * Connects the program to the account for its workspace, in one transaction: claims the account
 * (or takes over another workspace's unverified claim, or rotates the workspace's own secret),
 * then points the program at it; the account the program leaves is released when no program of
 * the workspace uses it any more.
 */
export function connectProcessor(db: Database, box: SecretBox, c: ConnectInput, by: AuditContext): Promise<ConnectOutcome> {
  const sealed = box.seal(c.webhookSecret, context(c.accountId));
  return db.transaction(async (tx) => {
    const before = await tx.one<{ account_id: string }>(q.connectionOf, [c.programId]);
    if (!(await claim(tx, box, c, sealed))) return 'taken';
    await tx.many(q.connect, [c.programId, c.accountId]);
    if (before && before.account_id !== c.accountId) await release(tx, before.account_id, c.workspaceId);
    // The account, never its webhook secret: connecting again with a new secret is a rotation, shown as such.
    await recordAudit(tx, by, {
      action: 'processor_connection.connected',
      programId: c.programId,
      target: { type: 'processor_connection', id: c.programId },
      before: before ? { account_id: before.account_id } : null,
      after: { account_id: c.accountId, webhook_secret: '[redacted]' },
    });
    return 'connected';
  });
}

/** False when another workspace holds the account verified. */
async function claim(tx: Transaction, box: SecretBox, c: ConnectInput, sealed: string): Promise<boolean> {
  // A concurrent release may delete the row between the insert and the lock: then claim again.
  for (;;) {
    if (await tx.one(q.claimNew, [c.accountId, c.workspaceId, sealed])) return true;
    const owner = await tx.one<{ workspace_id: number; secret: string; verified: boolean }>(q.lock, [c.accountId]);
    if (!owner) continue;
    if (Number(owner.workspace_id) !== c.workspaceId) {
      if (owner.verified) return false;
      // Nothing came through an unverified claim's URL (its first valid event would have verified it).
      await tx.many(q.takeOver, [c.accountId, c.workspaceId, sealed]);
      return true;
    }
    if (openOrUndefined(box, owner.secret, c.accountId) !== c.webhookSecret) await tx.many(q.rotate, [c.accountId, sealed, c.previousUntil]);
    return true;
  }
}

/** True when a connection was removed; the account is released when the workspace connects no other program to it. */
export function disconnectProcessor(db: Database, programId: number, workspaceId: number, by: AuditContext): Promise<boolean> {
  return db.transaction(async (tx) => {
    const removed = await tx.one<{ account_id: string }>(q.disconnect, [programId]);
    if (!removed) return false;
    await release(tx, removed.account_id, workspaceId);
    await recordAudit(tx, by, {
      action: 'processor_connection.disconnected',
      programId,
      target: { type: 'processor_connection', id: programId },
      before: { account_id: removed.account_id },
      after: null,
    });
    return true;
  });
}

async function release(tx: Transaction, accountId: string, workspaceId: number) {
  if ((await tx.many(q.release, [accountId, workspaceId])).length) await tx.many(q.forget, [accountId]);
}

/**
 * The operator ends a workspace's claim on an account, verified or not, with its connections to it
 * (`npm run ops -- release-processor-account`). A claimant chooses the secret it verifies with, so
 * the first verified claim may be a squatter's: the account's real holder asks the operator, who
 * checks with the processor, releases the account, and the holder connects it. Undefined when
 * nobody holds the account.
 */
export function releaseProcessorAccount(db: Database, accountId: string): Promise<{ workspaceId: number; programs: number } | undefined> {
  return db.transaction(async (tx) => {
    const released = (await tx.one<{ workspace_id: number | null; programs: number }>(q.forceRelease, [accountId]))!;
    if (released.workspace_id === null) return undefined;
    await tx.many(q.forget, [accountId]);
    return { workspaceId: Number(released.workspace_id), programs: released.programs };
  });
}

/** The secrets that may sign an account's events on its own URL, and whose they are. */
export interface AccountSigning {
  workspaceId: number;
  /** Identifies this claim: a verification applies to it only (a take-over makes a new one). */
  claim: string;
  verified: boolean;
  /** The current secret, and the previous one during a rotation. */
  secrets: string[];
  /** A stored secret this key cannot open (SECRETS_KEY changed): logged by the caller. */
  unreadable: boolean;
}

export async function accountSigning(db: Queryable, box: SecretBox, accountId: string, nowMs: number): Promise<AccountSigning | undefined> {
  const row = await db.one<{ workspace_id: number; claim: string; verified: boolean; secret: string; previous_secret: string | null; previous_until: Date | null }>(
    q.signing,
    [accountId],
  );
  if (!row) return undefined;
  const sealed = [row.secret, ...(row.previous_secret && row.previous_until && row.previous_until.getTime() > nowMs ? [row.previous_secret] : [])];
  const secrets = sealed.map((s) => openOrUndefined(box, s, accountId)).filter((s): s is string => s !== undefined);
  return { workspaceId: Number(row.workspace_id), claim: row.claim, verified: row.verified, secrets, unreadable: secrets.length < sealed.length };
}

/** The first valid event on the account's own URL proves the claim. */
export async function markAccountVerified(db: Queryable, accountId: string, claim: string): Promise<void> {
  await db.many(q.verify, [accountId, claim]);
}

function openOrUndefined(box: SecretBox, sealed: string, accountId: string): string | undefined {
  try {
    return box.open(sealed, context(accountId));
  } catch {
    return undefined;
  }
}

/**
 * Through which URL an event came: the operator's shared one (its secrets), or an account's own
 * (that account's secret, held by one workspace).
 */
export type EventScope = { channel: 'operator' } | { channel: 'account'; accountId: string; workspaceId: number };

/** The scope as the SQL functions read it (account_workspace, processor_event_program): null for the operator's URL. */
export const scopeJson = (scope: EventScope) => (scope.channel === 'account' ? { channel: 'account', workspace: scope.workspaceId } : null);

/** An account's scope as stored with a waiting event; null (the operator's URL) for those stored before. */
export function scopeOf(stored: { channel?: string; workspace?: number | string } | null | undefined, accountId: string | null | undefined): EventScope {
  return stored?.channel === 'account' && accountId ? { channel: 'account', accountId, workspaceId: Number(stored.workspace) } : { channel: 'operator' };
}

/**
 * Which programs an event of the account may act on under its scope: workspace null when no
 * workspace may (on the operator's URL, the account is not verified by any).
 */
export async function accountScope(tx: Queryable, accountId: string, scope: EventScope): Promise<{ workspace: number | null; programs: number[] }> {
  const row = (await tx.one<{ workspace: number | null; programs: number[] }>(q.scope, [accountId, JSON.stringify(scopeJson(scope))]))!;
  return { workspace: row.workspace === null ? null : Number(row.workspace), programs: row.programs.map(Number) };
}
