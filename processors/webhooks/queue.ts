/**
 * The delivery queue in Postgres (schemas/postgres/0030): the dispatcher's enqueue, the worker's
 * claim and results, and the log's pruning. Every statement takes a batch, so a thousand
 * deliveries a second cost a few statements, not thousands.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';

/** Attempts, deliveries and events older than this are deleted (decisions/outgoing-webhooks.md, "Delivery log"). */
export const LOG_RETENTION_DAYS = 30;

const q = {
  // One row per endpoint and event, idempotent; the event's body is kept once, only when some
  // enabled endpoint of its program asks for its type. An endpoint gets the events published after
  // it was made (a minute's slack for clocks): a consumer group reading the log from its start
  // sends nothing old to a new endpoint.
  enqueue: sql(
    'webhooks.enqueue',
    `WITH ev AS (
       SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS ev (event_id, program_id, type, body, published_at)
     ), matched AS (
       SELECT ev.event_id, ev.program_id, ev.type, ev.body, e.id AS endpoint_id
         FROM ev JOIN webhook_endpoints e ON e.program_id = ev.program_id AND e.status = 'enabled' AND ev.type = ANY (e.events)
                                         AND coalesce(ev.published_at, now()) >= e.created_at - interval '1 minute'
     ), events AS (
       INSERT INTO webhook_events (event_id, program_id, type, body)
       SELECT DISTINCT ON (event_id) event_id, program_id, type, body FROM matched
       ON CONFLICT (event_id) DO NOTHING
     ), deliveries AS (
       INSERT INTO webhook_deliveries (endpoint_id, event_id, program_id, event_type, next_attempt_at)
       SELECT endpoint_id, event_id, program_id, type, now() FROM matched
       ON CONFLICT (endpoint_id, event_id) DO NOTHING
       RETURNING 1
     )
     SELECT count(*)::int AS created FROM deliveries`,
  ),
  // Up to $2 due deliveries of each enabled endpoint not busy in this worker, $3 in all; taking one
  // moves its time past the attempt's timeout (the lease): a worker that dies leaves it due again.
  claim: sql(
    'webhooks.claim',
    `WITH due AS (
       SELECT d.id FROM webhook_endpoints e
        CROSS JOIN LATERAL (
          SELECT id FROM webhook_deliveries d
           WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at LIMIT $2
           FOR UPDATE SKIP LOCKED) d
        WHERE e.status = 'enabled' AND e.id <> ALL ($1::uuid[])
        LIMIT $3
     )
     UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => $4)
       FROM due, webhook_events ev, webhook_endpoints e
      WHERE d.id = due.id AND ev.event_id = d.event_id AND e.id = d.endpoint_id
     RETURNING d.id, d.endpoint_id, d.event_id::text, d.retries, d.window_start, ev.body, e.url,
               e.secret, CASE WHEN e.previous_until > now() THEN e.previous_secret END AS previous_secret`,
  ),
  // The attempts, each delivery's new state, and each endpoint's health, in one statement; returns
  // the endpoints this batch disabled (failing for 5 days).
  record: sql(
    'webhooks.record',
    `WITH r AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[], $8::boolean[], $9::timestamptz[])
         AS r (delivery_id, endpoint_id, attempted_at, status_code, duration_ms, response_body, error, ok, next_at)
     ), attempts AS (
       INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempted_at, status_code, duration_ms, response_body, error)
       SELECT delivery_id, endpoint_id, attempted_at, status_code, duration_ms, response_body, error FROM r
     ), deliveries AS (
       -- An attempt that ends after its endpoint was disabled (or deleted) fails: nothing sends it any more.
       UPDATE webhook_deliveries d
          SET status = CASE WHEN r.ok THEN 'delivered' WHEN r.next_at IS NULL OR e.status IS DISTINCT FROM 'enabled' THEN 'failed' ELSE 'pending' END,
              attempts = d.attempts + 1,
              retries = CASE WHEN r.ok THEN d.retries ELSE d.retries + 1 END,
              next_attempt_at = CASE WHEN r.ok OR e.status IS DISTINCT FROM 'enabled' THEN NULL ELSE r.next_at END,
              last_attempt_at = r.attempted_at,
              delivered_at = CASE WHEN r.ok THEN r.attempted_at ELSE d.delivered_at END
         FROM r LEFT JOIN webhook_endpoints e ON e.id = r.endpoint_id
        WHERE d.id = r.delivery_id AND d.status = 'pending'
     ), health AS (
       SELECT endpoint_id, bool_or(ok) AS any_ok, min(attempted_at) FILTER (WHERE NOT ok) AS first_failed FROM r GROUP BY endpoint_id
     ), judged AS (
       SELECT h.endpoint_id, h.any_ok, e.failing_since AS was_failing, coalesce(e.failing_since, h.first_failed) AS failing_since,
              e.status = 'enabled' AND NOT h.any_ok AND coalesce(e.failing_since, h.first_failed) <= now() - make_interval(secs => $10) AS disable
         FROM health h JOIN webhook_endpoints e ON e.id = h.endpoint_id
     ), endpoints AS (
       -- Only rows whose health changes are written: a healthy endpoint's row is not touched per batch.
       UPDATE webhook_endpoints e
          SET failing_since = CASE WHEN j.any_ok THEN NULL ELSE j.failing_since END,
              status = CASE WHEN j.disable THEN 'disabled' ELSE e.status END,
              disabled_reason = CASE WHEN j.disable THEN 'failing' ELSE e.disabled_reason END,
              disabled_at = CASE WHEN j.disable THEN now() ELSE e.disabled_at END
         FROM judged j
        WHERE e.id = j.endpoint_id AND (j.disable OR (j.any_ok AND j.was_failing IS NOT NULL) OR (NOT j.any_ok AND j.was_failing IS NULL))
       RETURNING e.id, j.disable AS disabled
     )
     SELECT id::text FROM endpoints WHERE disabled`,
  ),
  // A disabled endpoint is sent nothing more: what it still had pending fails (a brand may redeliver it).
  failPending: sql(
    'webhooks.fail_pending',
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL
      WHERE endpoint_id = ANY ($1::uuid[]) AND status = 'pending'`,
  ),
  prune: sql(
    'webhooks.prune',
    `WITH old AS (SELECT event_id FROM webhook_events WHERE created_at < now() - make_interval(days => $1) LIMIT $2),
          gone AS (DELETE FROM webhook_events e USING old WHERE e.event_id = old.event_id RETURNING 1)
     SELECT count(*)::int AS deleted FROM gone`,
  ),
};

/** An event for the queue: its webhook id (schemas/webhooks.ts, webhookIdOf), its program, the webhook type and body. */
export interface QueuedEvent {
  eventId: string;
  programId: number;
  type: string;
  body: string;
  /** When the log accepted it (the Kafka message's time); undefined: now. */
  publishedAt?: Date;
}

/** Creates the deliveries of a batch of events (none twice); returns how many were new. */
export async function enqueue(db: Queryable, events: readonly QueuedEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const row = await db.one<{ created: number }>(q.enqueue, [
    events.map((e) => e.eventId),
    events.map((e) => e.programId),
    events.map((e) => e.type),
    events.map((e) => e.body),
    events.map((e) => e.publishedAt ?? null),
  ]);
  return row?.created ?? 0;
}

/** A delivery the worker took, with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  retries: number;
  window_start: Date;
  body: string;
  url: string;
  /** Sealed (core/secret-box.ts). */
  secret: string;
  /** Sealed; null unless a rotation's previous secret still signs. */
  previous_secret: string | null;
}

export function claim(db: Queryable, o: { busyEndpoints: readonly string[]; perEndpoint: number; limit: number; leaseSeconds: number }): Promise<ClaimedDelivery[]> {
  return db.many<ClaimedDelivery>(q.claim, [o.busyEndpoints, o.perEndpoint, o.limit, o.leaseSeconds]);
}

/** One attempt's outcome. nextAt: when to try again (undefined with ok, or to give up). */
export interface AttemptResult {
  deliveryId: string;
  endpointId: string;
  attemptedAt: Date;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
  ok: boolean;
  nextAt: Date | undefined;
}

/**
 * Records a batch of attempts; returns the endpoints it disabled, whose pending deliveries it failed
 * in the same transaction (no reader sees a disabled endpoint with deliveries still pending).
 */
export async function record(db: Database, results: readonly AttemptResult[], disableAfterMs: number): Promise<string[]> {
  if (results.length === 0) return [];
  return db.transaction((tx) => recordIn(tx, results, disableAfterMs));
}

async function recordIn(db: Queryable, results: readonly AttemptResult[], disableAfterMs: number): Promise<string[]> {
  const rows = await db.many<{ id: string }>(q.record, [
    results.map((r) => r.deliveryId),
    results.map((r) => r.endpointId),
    results.map((r) => r.attemptedAt),
    results.map((r) => r.statusCode),
    results.map((r) => r.durationMs),
    results.map((r) => r.responseBody),
    results.map((r) => r.error),
    results.map((r) => r.ok),
    results.map((r) => r.nextAt ?? null),
    disableAfterMs / 1_000,
  ]);
  const disabled = rows.map((r) => r.id);
  if (disabled.length) await db.many(q.failPending, [disabled]);
  return disabled;
}

/** Deletes up to `limit` events older than the retention, with their deliveries and attempts. */
export async function prune(db: Queryable, limit = 5_000, retentionDays = LOG_RETENTION_DAYS): Promise<number> {
  return (await db.one<{ deleted: number }>(q.prune, [retentionDays, limit]))?.deleted ?? 0;
}
