import { sql, type Queryable } from '../../core/db.js';
import type { TestEventLoggedPayload } from '../../schemas/event-contract.js';

export type TestEventType = TestEventLoggedPayload['event_type'];

const logSql = sql(
  'tracking_logs.append',
  `WITH entry AS (
     INSERT INTO tracking_logs (program_id, event_type, entity_id) VALUES ($1, $2, $3)
     RETURNING id, program_id, event_type, entity_id, created_at
   )
   INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
   SELECT 'test_event.logged', program_id::text, program_id, true, created_at,
          jsonb_build_object('tracking_log_id', id, 'program_id', program_id, 'event_type', event_type,
                             'entity_id', entity_id, 'created_at', created_at)
     FROM entry`,
);

/** A test-mode event: what the integration checklist and readiness count. */
export async function logTestEvent(tx: Queryable, programId: number, type: TestEventType, entityId: string) {
  await tx.many(logSql, [programId, type, entityId]);
}
