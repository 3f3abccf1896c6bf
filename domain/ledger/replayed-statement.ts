/**
 * A statement recomputed from the event log alone (partner-program.md, "Statements and
 * reconciliation"): the program's events, as a consumer decodes them from the log (Kafka, or the
 * embedded log's outbox through the same Avro codec), are written into a scratch store, a fresh
 * database with the service's schema, and the same statement is computed there. `npm run ops --
 * verify-statement` compares it with the service's own; any difference means the ledger, the sales
 * or the refunds in Postgres are not what their events said.
 *
 * Only the events a statement reads are replayed: sale.recorded, sale.status_changed,
 * sale.partially_refunded, ledger_entry.recorded, and commission.reversed for the reversal entry it
 * carries. Loaded sales first, then refunds, then the ledger, so the order events arrived in across
 * partitions does not matter.
 */
import { sql, type Database } from '../../core/db.js';
import type { DecodedEvent } from '../../schemas/event-contract.js';
import { firstDifference, statement, type Statement } from './statements.js';

const q = {
  workspace: sql('scratch.workspace', `INSERT INTO workspaces (id, name) VALUES (1, 'scratch') ON CONFLICT DO NOTHING`),
  program: sql(
    'scratch.program',
    `INSERT INTO programs (id, workspace_id, name, domain, commission_type, commission_rate) VALUES ($1, 1, 'scratch', 'scratch.invalid', 'percent', 1)
     ON CONFLICT DO NOTHING`,
  ),
  sales: sql(
    'scratch.sales',
    `INSERT INTO sale_events (id, program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at, status, is_recurring, test, created_at)
     SELECT (s->>'sale_id')::uuid, (s->>'program_id')::bigint, (s->>'customer_id')::bigint, (s->>'partner_id')::bigint, s->>'transaction_id',
            (s->>'amount_cents')::bigint, s->>'currency', (s->>'occurred_at')::timestamptz, s->>'status', (s->>'is_recurring')::boolean,
            (s->>'test')::boolean, (s->>'created_at')::timestamptz
       FROM jsonb_array_elements($1::jsonb) AS s`,
  ),
  refunds: sql(
    'scratch.refunds',
    `WITH r AS (
       INSERT INTO refunds (id, sale_id, program_id, reason, created_at)
       SELECT (r->>'refund_id')::uuid, (r->>'sale_id')::uuid, (r->>'program_id')::bigint, r->>'reason', (r->>'changed_at')::timestamptz
         FROM jsonb_array_elements($1::jsonb) AS r
       RETURNING sale_id
     )
     UPDATE sale_events s SET status = x.status FROM (SELECT r->>'sale_id' AS sale_id, r->>'status' AS status FROM jsonb_array_elements($1::jsonb) AS r) x
      WHERE s.id = x.sale_id::uuid`,
  ),
  partials: sql(
    'scratch.partial_refunds',
    `WITH p AS (
       INSERT INTO partial_refunds (id, sale_id, program_id, amount_cents, refunded_cents, created_at)
       SELECT (p->>'partial_refund_id')::uuid, (p->>'sale_id')::uuid, (p->>'program_id')::bigint, (p->>'amount_cents')::bigint,
              (p->>'refunded_cents')::bigint, (p->>'refunded_at')::timestamptz
         FROM jsonb_array_elements($1::jsonb) AS p
       RETURNING sale_id, refunded_cents
     )
     UPDATE sale_events s SET refunded_cents = x.refunded FROM (SELECT sale_id, max(refunded_cents) AS refunded FROM p GROUP BY sale_id) x
      WHERE s.id = x.sale_id`,
  ),
  entries: sql(
    'scratch.ledger_entries',
    `INSERT INTO ledger_entries (id, program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, payout_id, cause, rule_version,
                                 reason, created_at, available_at)
     SELECT (e->>'entry_id')::bigint, (e->>'program_id')::bigint, (e->>'partner_id')::bigint, e->>'kind', (e->>'amount_minor')::bigint,
            e->>'currency', (e->>'commission_id')::uuid, (e->>'sale_id')::uuid, (e->>'payout_id')::uuid, e->>'cause',
            (e->>'rule_version')::integer, e->>'reason', (e->>'created_at')::timestamptz, (e->>'available_at')::timestamptz
       FROM jsonb_array_elements($1::jsonb) AS e`,
  ),
};

/** The event types loaded into the scratch store, in the order they are loaded. */
const LOADED_TYPES = ['sale.recorded', 'sale.status_changed', 'sale.partially_refunded', 'ledger_entry.recorded'] as const;
const STEPS = [q.sales, q.refunds, q.partials, q.entries];

/** The event types a statement reads: those loaded, and commission.reversed for the reversal entry it carries. */
export const STATEMENT_EVENT_TYPES = [...LOADED_TYPES, 'commission.reversed'] as const;
const CHUNK = 5_000;

/**
 * Loads one program's events into `scratch` (a freshly migrated database of its own). Events of
 * other programs and other types are skipped; a repeated event (a redelivery) is loaded once.
 */
export async function loadStatementEvents(scratch: Database, programId: number, events: Iterable<DecodedEvent>): Promise<number> {
  const byType = new Map<string, Map<string, Record<string, unknown>>>(LOADED_TYPES.map((t) => [t, new Map()]));
  const entries = byType.get('ledger_entry.recorded')!;
  for (const e of events) {
    if (e.value.program_id !== programId) continue;
    if (e.eventType === 'commission.reversed') {
      const entry = e.value.payload.ledger_entry;
      if (entry !== null && typeof entry === 'object') entries.set(e.value.event_id, entry as Record<string, unknown>);
      continue;
    }
    byType.get(e.eventType)?.set(e.value.event_id, e.value.payload);
  }
  await scratch.many(q.workspace);
  await scratch.many(q.program, [programId]);
  let loaded = 0;
  for (const [i, type] of LOADED_TYPES.entries()) {
    const payloads = [...byType.get(type)!.values()];
    for (let at = 0; at < payloads.length; at += CHUNK) {
      await scratch.many(STEPS[i]!, [JSON.stringify(payloads.slice(at, at + CHUNK))]);
    }
    loaded += payloads.length;
  }
  return loaded;
}

export interface StatementCheck {
  service: Statement;
  replayed: Statement;
  match: boolean;
  /** The first place they differ (`statement.partners[0].closing: 1200 vs 1250`), when they do. */
  difference: string | undefined;
}

/** The service's statement and the one replayed into `scratch`, compared. */
export async function compareStatements(service: Database, scratch: Database, programId: number, period: string): Promise<StatementCheck> {
  const [mine, replayed] = [await statement(service, programId, period), await statement(scratch, programId, period, { checkpoints: false })];
  const { digest: _a, ...a } = mine;
  const { digest: _b, ...b } = replayed;
  const match = mine.digest === replayed.digest;
  return { service: mine, replayed, match, difference: match ? undefined : (firstDifference(a, b) ?? 'digest') };
}
