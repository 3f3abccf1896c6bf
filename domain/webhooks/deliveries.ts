/**
 * An endpoint's delivery log (issue 32, point 4): its deliveries newest first, in cursor pages, each
 * with every attempt (status code, duration, the start of the answer or why none came), and a
 * redelivery on demand. Rows older than the retention are pruned by the delivery worker
 * (processors/webhooks/queue.ts, LOG_RETENTION_DAYS).
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';
import { getEndpoint } from './endpoints.js';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

const VIEW = `d.id, d.event_id, d.event_type, d.status, d.attempts AS attempt_count, d.next_attempt_at, d.last_attempt_at,
  d.delivered_at, d.created_at, d.created_at::text AS position_at`;

const q = {
  page: sql(
    'webhook_deliveries.page',
    `SELECT ${VIEW} FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2)
        AND ($3::timestamptz IS NULL OR (d.created_at, d.id) < ($3::timestamptz, $4::uuid))
      ORDER BY d.created_at DESC, d.id DESC LIMIT $5`,
  ),
  attempts: sql(
    'webhook_attempts.of_deliveries',
    `SELECT delivery_id, attempted_at, status_code, duration_ms, response_body, error
       FROM webhook_attempts WHERE delivery_id = ANY ($1::uuid[]) ORDER BY delivery_id, id`,
  ),
  lock: sql('webhook_deliveries.lock', `SELECT ${VIEW} FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND d.id = $2 FOR UPDATE`),
  // A new window from now: due at once, the backoff schedule from its start, 3 more days of retries.
  redeliver: sql(
    'webhook_deliveries.redeliver',
    `UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(), retries = 0, window_start = now()
      WHERE d.endpoint_id = $1 AND d.id = $2 RETURNING ${VIEW}`,
  ),
};

export interface AttemptView {
  attempted_at: Date;
  status_code: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
  /** created_at as Postgres prints it, for the page cursor. */
  position_at: string;
}

export interface DeliveryView extends DeliveryRow {
  attempts: AttemptView[];
}

async function withAttempts(db: Queryable, rows: DeliveryRow[]): Promise<DeliveryView[]> {
  if (rows.length === 0) return [];
  const attempts = await db.many<AttemptView & { delivery_id: string }>(q.attempts, [rows.map((r) => r.id)]);
  const byDelivery = new Map<string, AttemptView[]>();
  for (const { delivery_id, ...attempt } of attempts) {
    const list = byDelivery.get(delivery_id) ?? [];
    list.push(attempt);
    byDelivery.set(delivery_id, list);
  }
  return rows.map((r) => ({ ...r, attempts: byDelivery.get(r.id) ?? [] }));
}

export interface DeliveryPageQuery {
  status?: DeliveryStatus;
  /** The last row of the previous page (its created_at as Postgres prints it, and its id). */
  after?: { at: string; id: string };
  limit: number;
}

/** One page, newest first; `more` when another page follows. */
export async function listDeliveries(db: Queryable, programId: number, endpointId: string, page: DeliveryPageQuery): Promise<{ deliveries: DeliveryView[]; more: boolean }> {
  await getEndpoint(db, programId, endpointId);
  const rows = await db.many<DeliveryRow>(q.page, [endpointId, page.status ?? null, page.after?.at ?? null, page.after?.id ?? null, page.limit + 1]);
  return { deliveries: await withAttempts(db, rows.slice(0, page.limit)), more: rows.length > page.limit };
}

const deliveryState = ({ position_at: _position, ...row }: DeliveryRow) => row;

/** Sends the delivery again (a failed, delivered or pending one), with a new retry window. */
export async function redeliver(db: Database, programId: number, endpointId: string, deliveryId: string, by: AuditContext): Promise<DeliveryView> {
  const endpoint = await getEndpoint(db, programId, endpointId);
  if (endpoint.status !== 'enabled') throw refused({ reason: 'webhook_endpoint_disabled' });
  const row = await db.transaction(async (tx) => {
    const before = await tx.one<DeliveryRow>(q.lock, [endpointId, deliveryId]);
    if (!before) throw refused({ reason: 'webhook_delivery_not_found' });
    const after = (await tx.one<DeliveryRow>(q.redeliver, [endpointId, deliveryId]))!;
    await recordAudit(tx, by, {
      action: 'webhook_delivery.redelivered',
      programId,
      target: { type: 'webhook_delivery', id: deliveryId },
      before: { endpoint_id: endpointId, ...deliveryState(before) },
      after: { endpoint_id: endpointId, ...deliveryState(after) },
    });
    return after;
  });
  return (await withAttempts(db, [row]))[0]!;
}
