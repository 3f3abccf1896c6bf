import { sql, type Queryable } from '../../core/db.js';
import type { TestEventLoggedPayload } from '../../schemas/event-contract.js';

export type TestEventType = TestEventLoggedPayload['event_type'];

// log_test_event (schemas/postgres/functions/log_test_event.sql) writes the entry and its outbox event; the
// sale and lead functions call it too.
const logSql = sql('tracking_logs.append', `SELECT log_test_event($1, $2, $3)`);

/** A test-mode event: what the integration checklist and readiness count. */
export async function logTestEvent(tx: Queryable, programId: number, type: TestEventType, entityId: string) {
  await tx.many(logSql, [programId, type, entityId]);
}
