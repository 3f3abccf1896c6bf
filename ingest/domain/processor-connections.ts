import { sql, type Database, type Queryable } from '../../core/db.js';
import type { ProcessorConnection } from './payment-step.js';

/**
 * A program's connection to a processor account. Its status is `connected` from the owner's
 * connect until the processor reports the account deauthorized (account.application.deauthorized
 * dated after the connect): then `deauthorized`. Without a row the program is `not_connected`.
 */
const CONNECTION = `c.account_id AS "accountId", c.connected_at AS "connectedAt",
  COALESCE(a.charges_enabled, false) AS "chargesEnabled", COALESCE(a.payouts_enabled, false) AS "payoutsEnabled",
  COALESCE(a.details_submitted, false) AS "detailsSubmitted",
  CASE WHEN a.deauthorized_at IS NOT NULL AND a.deauthorized_at >= c.connected_at THEN 'deauthorized' ELSE 'connected' END AS status`;

const q = {
  get: sql(
    'processor_connections.get',
    `SELECT ${CONNECTION} FROM processor_connections c LEFT JOIN processor_accounts a ON a.account_id = c.account_id WHERE c.program_id = $1`,
  ),
  connect: sql(
    'processor_connections.connect',
    `INSERT INTO processor_connections (program_id, account_id) VALUES ($1, $2)
     ON CONFLICT (program_id) DO UPDATE SET account_id = EXCLUDED.account_id, connected_at = now()`,
  ),
  disconnect: sql('processor_connections.disconnect', `DELETE FROM processor_connections WHERE program_id = $1 RETURNING program_id`),
  programsOfAccount: sql(
    'processor_connections.programs_of_account',
    `SELECT coalesce(connected_programs($1), '{}') AS programs`,
  ),
  // Only a newer report changes what is known of an account.
  accountUpdated: sql(
    'processor_accounts.updated',
    `INSERT INTO processor_accounts (account_id, charges_enabled, payouts_enabled, details_submitted, reported_at)
     VALUES ($1, $2, $3, $4, to_timestamp($5))
     ON CONFLICT (account_id) DO UPDATE SET charges_enabled = EXCLUDED.charges_enabled, payouts_enabled = EXCLUDED.payouts_enabled,
            details_submitted = EXCLUDED.details_submitted, reported_at = EXCLUDED.reported_at
      WHERE processor_accounts.reported_at IS NULL OR processor_accounts.reported_at <= EXCLUDED.reported_at`,
  ),
  deauthorized: sql(
    'processor_accounts.deauthorized',
    `INSERT INTO processor_accounts (account_id, deauthorized_at) VALUES ($1, to_timestamp($2))
     ON CONFLICT (account_id) DO UPDATE SET deauthorized_at = GREATEST(processor_accounts.deauthorized_at, EXCLUDED.deauthorized_at)`,
  ),
  events: sql(
    'processor_events.of_program',
    `SELECT event_id, event_type, outcome, reason, livemode, sale_id, transaction_id, deliveries, event_created_at, received_at, updated_at
       FROM processor_events WHERE program_id = $1 ORDER BY received_at DESC, event_id LIMIT $2`,
  ),
};

export async function processorConnection(db: Queryable, programId: number): Promise<ProcessorConnection | null> {
  return (await db.one<ProcessorConnection>(q.get, [programId])) ?? null;
}

export async function connectProcessor(db: Database, programId: number, accountId: string): Promise<ProcessorConnection> {
  await db.many(q.connect, [programId, accountId]);
  return (await processorConnection(db, programId))!;
}

/** True when a connection was removed. */
export async function disconnectProcessor(db: Database, programId: number): Promise<boolean> {
  return (await db.many(q.disconnect, [programId])).length > 0;
}

/** The programs an account's events may act on: connected and not deauthorized since (connected_programs, schemas/postgres/0016; payments ask it in SQL). */
export async function connectedPrograms(tx: Queryable, accountId: string): Promise<number[]> {
  return (await tx.one<{ programs: number[] }>(q.programsOfAccount, [accountId]))!.programs.map(Number);
}

export type AccountEvent =
  | { kind: 'updated'; accountId: string; chargesEnabled: boolean; payoutsEnabled: boolean; detailsSubmitted: boolean; at: number }
  | { kind: 'deauthorized'; accountId: string; at: number };

export async function applyAccountEvent(tx: Queryable, e: AccountEvent): Promise<void> {
  if (e.kind === 'updated') await tx.many(q.accountUpdated, [e.accountId, e.chargesEnabled, e.payoutsEnabled, e.detailsSubmitted, e.at]);
  else await tx.many(q.deauthorized, [e.accountId, e.at]);
}

export interface ProcessorEventRow {
  event_id: string;
  event_type: string;
  outcome: string;
  reason: string | null;
  livemode: boolean;
  sale_id: string | null;
  transaction_id: string | null;
  deliveries: number;
  event_created_at: Date;
  received_at: Date;
  updated_at: Date;
}

/** The processor events that reached a program, newest first, with what became of each. */
export const processorEventsOf = (db: Database, programId: number, limit: number) =>
  db.many<ProcessorEventRow>(q.events, [programId, limit]);
