import { isUniqueViolation, sql, type Database, type Queryable } from '../../core/db.js';
import { createBatchedStatement, type ItemResult } from '../batched-statement.js';
import { refused, type DomainError } from '../errors.js';

/**
 * Sales, leads and refunds are written by SQL functions, one statement each (record_sale,
 * record_lead, record_refund in schemas/postgres/functions/), so that a call is one round trip; the
 * tracking routes send the calls that arrive together as one batch (record_batch). This module is
 * how the domain calls them: the same item and the same answer either way.
 */
export type WriteKind = 'sale' | 'lead' | 'refund';

const q = {
  sale: sql('tracking.record_sale', `SELECT record_sale($1::jsonb, $2) AS result`),
  lead: sql('tracking.record_lead', `SELECT record_lead($1::jsonb) AS result`),
  refund: sql('tracking.record_refund', `SELECT record_refund($1::jsonb) AS result`),
  batch: sql('tracking.record_batch', `SELECT record_batch($1, $2::jsonb, $3) AS results`),
};

/** The functions raise 'refused' with the reason as DETAIL and what it names as HINT. */
const RAISED = 'refused';

/** The refusals the functions raise, and how each reads its HINT. */
function refusalOf(reason: string | undefined, hint: string | null | undefined): DomainError | undefined {
  switch (reason) {
    case 'duplicate_transaction':
      // An empty hint: another program's sale, which is not named.
      return refused({ reason, saleId: hint || null });
    case 'status_locked':
      return refused({ reason, status: hint ?? '' });
    case 'customer_not_found':
    case 'customer_other_program':
    case 'no_junction':
    case 'outside_window':
    case 'origin_not_allowed':
    case 'customer_key_taken':
    case 'sale_not_found':
      return refused({ reason });
    default:
      return undefined;
  }
}

/** One write, in the caller's transaction or on its own: the function's JSON result. */
async function writeOne(db: Queryable, kind: WriteKind, item: object, feeBps = 0): Promise<unknown> {
  try {
    const row = await db.one<{ result: unknown }>(q[kind], kind === 'sale' ? [JSON.stringify(item), feeBps] : [JSON.stringify(item)]);
    return row!.result;
  } catch (error) {
    const e = error as { message?: string; detail?: string; hint?: string };
    if (isUniqueViolation(error, 'customers_program_id_customer_key_key')) throw refused({ reason: 'customer_key_taken' });
    throw (e.message === RAISED ? refusalOf(e.detail, e.hint) : undefined) ?? error;
  }
}

type BatchAnswer = { ok: unknown } | { refused: string; hint: string | null } | { failed: string; message: string };

/**
 * Deadlocks between concurrent batches, serialization failures and unique violations (two batches
 * creating one customer key): that item is written again alone, where the answer is exact.
 */
const WRITTEN_AGAIN_ALONE = new Set(['40P01', '40001', '23505']);

/**
 * Writes of one kind from concurrent requests, by group commit: one record_batch statement and one
 * commit per batch (batched-statement.ts). Each answer is exactly what writeOne would give.
 */
function createBatchedWriter(db: Database, kind: WriteKind, feeBps = 0): (item: object) => Promise<unknown> {
  return createBatchedStatement<object, unknown>(
    async (items) => {
      const row = await db.one<{ results: BatchAnswer[] }>(q.batch, [kind, JSON.stringify(items), feeBps]);
      return Promise.all(
        row!.results.map(async (answer, n): Promise<ItemResult<unknown>> => {
          if ('ok' in answer) return { ok: true, value: answer.ok };
          if ('refused' in answer) return { ok: false, error: refusalOf(answer.refused, answer.hint) ?? new Error(`refused: ${answer.refused}`) };
          if (WRITTEN_AGAIN_ALONE.has(answer.failed)) {
            return writeOne(db, kind, items[n]!, feeBps).then(
              (value) => ({ ok: true as const, value }),
              (error: unknown) => ({ ok: false as const, error }),
            );
          }
          return { ok: false, error: Object.assign(new Error(answer.message), { code: answer.failed }) };
        }),
      );
    },
    // 30: see record_batch (subtransaction ids per transaction).
    { maxBatch: 30, maxInFlight: db.kind === 'pglite' ? 1 : 4 },
  );
}

/** A tracking write as the domain offers it: its input as the function's item, its result as the outcome. */
export interface TrackingWrite<I, O> {
  /** One write, in the caller's transaction or on its own. */
  one(db: Queryable, input: I, feeBps?: number): Promise<O>;
  /** A route's writer: concurrent writes by group commit. */
  batched(db: Database, feeBps?: number): (input: I) => Promise<O>;
}

export function trackingWrite<I, O>(kind: WriteKind, toItem: (input: I) => object, toOutcome: (result: unknown) => O): TrackingWrite<I, O> {
  return {
    one: async (db, input, feeBps) => toOutcome(await writeOne(db, kind, toItem(input), feeBps)),
    batched: (db, feeBps) => {
      const write = createBatchedWriter(db, kind, feeBps);
      return async (input) => toOutcome(await write(toItem(input)));
    },
  };
}
