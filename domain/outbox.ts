import { sql, type Queryable } from '../core/db.js';
import type { OutboxEvent } from '../schemas/event-contract.js';

const append = sql(
  'outbox.append',
  `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
   SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::boolean[], $5::timestamptz[], $6::jsonb[])`,
);

/** Appends events in the caller's transaction, in one round trip. */
export async function appendEvents(tx: Queryable, events: OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.many(append, [
    events.map((e) => e.type),
    events.map((e) => e.key),
    events.map((e) => e.programId),
    events.map((e) => e.test),
    events.map((e) => e.occurredAt.toISOString()),
    events.map((e) => JSON.stringify(e.payload)),
  ]);
}
