import { sql, type Database, type Queryable } from '../../core/db.js';
import type { ProcessorConnection } from './payment-step.js';

/**
 * A program's connection to a processor account. Its status is `deauthorized` once the processor
 * reports the account deauthorized (account.application.deauthorized dated after the connect);
 * `pending_verification` until the account's workspace is the program's and has verified it (the
 * first valid event on the account's own URL, processor-account-owners.ts); `connected` then.
 * Without a row the program is `not_connected`.
 */
const CONNECTION = `c.account_id AS "accountId", c.connected_at AS "connectedAt",
  COALESCE(a.charges_enabled, false) AS "chargesEnabled", COALESCE(a.payouts_enabled, false) AS "payoutsEnabled",
  COALESCE(a.details_submitted, false) AS "detailsSubmitted",
  CASE WHEN a.deauthorized_at IS NOT NULL AND a.deauthorized_at >= c.connected_at THEN 'deauthorized'
       WHEN o.verified_at IS NOT NULL AND o.workspace_id = p.workspace_id THEN 'connected'
       ELSE 'pending_verification' END AS status`;

const q = {
  get: sql(
    'processor_connections.get',
    `SELECT ${CONNECTION} FROM processor_connections c JOIN programs p ON p.id = c.program_id
       LEFT JOIN processor_accounts a ON a.account_id = c.account_id
       LEFT JOIN processor_account_owners o ON o.account_id = c.account_id
      WHERE c.program_id = $1`,
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
  // The event's time as seconds: a time stored before created was checked (issue 27) may be one
  // a driver cannot turn into a Date (PGlite gives Invalid Date for years BC).
  events: sql(
    'processor_events.of_program',
    `SELECT e.event_id, e.event_type, e.outcome, e.reason, e.livemode, e.sale_id, e.transaction_id, e.deliveries,
            s.amount_cents AS sale_amount_minor, s.currency AS sale_currency,
            extract(epoch FROM e.event_created_at)::float8 AS event_created_seconds, e.received_at, e.updated_at
       FROM processor_events e LEFT JOIN sale_events s ON s.id = e.sale_id
      WHERE e.program_id = $1 ORDER BY e.received_at DESC, e.event_id LIMIT $2`,
  ),
};

export async function processorConnection(db: Queryable, programId: number): Promise<ProcessorConnection | null> {
  return (await db.one<ProcessorConnection>(q.get, [programId])) ?? null;
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
  /** The sale the event recorded or refunded (issue 33: the console shows what each event did). */
  sale_amount_minor: number | null;
  sale_currency: string | null;
  deliveries: number;
  event_created_seconds: number;
  received_at: Date;
  updated_at: Date;
}

/** The processor events that reached a program, newest first, with what became of each. */
export const processorEventsOf = (db: Database, programId: number, limit: number) =>
  db.many<ProcessorEventRow>(q.events, [programId, limit]);
