import { sql, type Database, type Queryable } from '../../core/db.js';
import { refused, type Refusal } from './errors.js';
import { createBatchedStatement, type ItemResult } from './batched-statement.js';
import type { Currency } from './payments.js';

export interface SaleInput {
  programId: number;
  transactionId: string | undefined;
  amountCents: number | undefined;
  customerKey: string | undefined;
  clickId: string | undefined;
  currency: Currency;
  occurredAt: Date | undefined;
  provider: string | undefined;
  providerPaymentId: string | undefined;
  livemode: boolean | undefined;
  isRecurring: boolean;
  saleType: string | undefined;
  subscriptionId: string | undefined;
  test: boolean;
}

export interface SaleRow {
  id: string;
  program_id: number;
  customer_id: number | null;
  partner_id: number | null;
  transaction_id: string;
  amount_cents: number;
  currency: Currency;
  occurred_at: Date;
  status: 'paid' | 'refunded' | 'chargeback';
  test: boolean;
  is_recurring: boolean;
  created_at: Date;
}

export interface CommissionRow {
  id: string;
  sale_id: string;
  program_id: number;
  partner_id: number;
  amount_cents: number;
  currency: Currency;
  status: 'pending' | 'reversed';
  created_at: Date;
}

export interface SaleOutcome {
  sale: SaleRow;
  commission: CommissionRow | null;
  converted: boolean;
  /**
   * Set when the sale was stored (and its transaction_id consumed) but is refused all the same:
   * the sale stays, and the caller answers with this refusal.
   */
  refusal?: StoredSaleRefusal;
}

export type StoredSaleRefusal = Extract<Refusal, { reason: 'partner_required' | 'commission_failed' }>;

/** A sale's refusal raised by record_sale (schemas/postgres/0012_record_sale.sql): the reason is its DETAIL. */
const SALE_REFUSED = 'sale_refused';
const REFUSALS_RAISED = ['duplicate_transaction', 'customer_not_found', 'customer_other_program', 'no_junction', 'outside_window'] as const;

const q = {
  record: sql(
    'sales.record',
    `SELECT record_sale($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) AS outcome`,
  ),
  recordBatch: sql('sales.record_batch', `SELECT record_sales($1::jsonb, $2) AS outcomes`),
};

/** A sale of a batch that record_sales refused or could not write. */
type BatchItemRefused = { refused: string; hint: string | null };
type BatchItemFailed = { failed: string; message: string };

/** What record_sale returns: rows as JSON (times as ISO strings). */
interface RecordedSale {
  sale: Omit<SaleRow, 'occurred_at' | 'created_at'> & { occurred_at: string; created_at: string };
  commission: (Omit<CommissionRow, 'created_at'> & { created_at: string }) | null;
  converted: boolean;
  refusal?: StoredSaleRefusal['reason'] | null;
}

let lastTestStamp = 0;
/** test_txn_<timestamp>, kept unique within the process when two arrive in one millisecond. */
function testTransactionId(): string {
  lastTestStamp = Math.max(Date.now(), lastTestStamp + 1);
  return `test_txn_${lastTestStamp}`;
}

/**
 * Records a sale with its customer, commission, platform fee and outbox events: one statement,
 * atomic on its own or in the caller's transaction. The rules are in record_sale.
 */
export async function recordSale(db: Queryable, input: SaleInput, feeBps: number): Promise<SaleOutcome> {
  const i = withTransactionId(input);
  let row: { outcome: RecordedSale } | undefined;
  try {
    row = await db.one<{ outcome: RecordedSale }>(q.record, [
      i.programId, i.transactionId, i.amountCents ?? 0, i.customerKey ?? null, i.clickId ?? null, i.currency,
      i.occurredAt?.toISOString() ?? null, i.provider ?? null, i.providerPaymentId ?? null, i.livemode ?? null,
      i.isRecurring, i.saleType ?? null, i.subscriptionId ?? null, i.test, feeBps,
    ]);
  } catch (error) {
    const e = error as { message?: string; detail?: string; hint?: string };
    throw (e.message === SALE_REFUSED ? saleRefusal(e.detail, e.hint) : undefined) ?? error;
  }
  return saleOutcome(row!.outcome);
}

/** Test-mode sales may leave the transaction_id out. */
const withTransactionId = (input: SaleInput) => ({ ...input, transactionId: input.transactionId ?? testTransactionId() });

function saleOutcome({ sale, commission, converted, refusal }: RecordedSale): SaleOutcome {
  return {
    sale: { ...sale, occurred_at: new Date(sale.occurred_at), created_at: new Date(sale.created_at) },
    commission: commission && { ...commission, created_at: new Date(commission.created_at) },
    converted,
    ...(refusal ? { refusal: { reason: refusal } } : {}),
  };
}

/** Deadlocks between concurrent batches and serialization failures: the sale is tried again alone. */
const RETRIED_ALONE = new Set(['40P01', '40001']);

/**
 * POST /track/sale's writer: concurrent sales go to record_sales together, one statement and one
 * commit per batch (batched-statement.ts). Each answer is exactly what recordSale would give.
 */
export function createSaleWriter(db: Database, feeBps: number): (input: SaleInput) => Promise<SaleOutcome> {
  const record = createBatchedStatement<SaleInput & { transactionId: string }, SaleOutcome>(
    async (batch) => {
      const row = await db.one<{ outcomes: (RecordedSale | BatchItemRefused | BatchItemFailed)[] }>(q.recordBatch, [
        JSON.stringify(batch.map((i) => ({
          program_id: i.programId, transaction_id: i.transactionId, amount_cents: i.amountCents ?? 0,
          customer_key: i.customerKey ?? null, click_id: i.clickId ?? null, currency: i.currency,
          occurred_at: i.occurredAt?.toISOString() ?? null, provider: i.provider ?? null,
          provider_payment_id: i.providerPaymentId ?? null, livemode: i.livemode ?? null, is_recurring: i.isRecurring,
          sale_type: i.saleType ?? null, subscription_id: i.subscriptionId ?? null, test: i.test,
        }))),
        feeBps,
      ]);
      return Promise.all(row!.outcomes.map(async (item, n): Promise<ItemResult<SaleOutcome>> => {
        if ('sale' in item) return { ok: true, value: saleOutcome(item) };
        if ('refused' in item) return { ok: false, error: saleRefusal(item.refused, item.hint ?? undefined) ?? new Error(`sale refused: ${item.refused}`) };
        if (RETRIED_ALONE.has(item.failed)) {
          return recordSale(db, batch[n]!, feeBps).then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
        }
        return { ok: false, error: Object.assign(new Error(item.message), { code: item.failed }) };
      }));
    },
    { maxBatch: 30, maxInFlight: db.kind === 'pglite' ? 1 : 4 },
  );
  return (input) => record(withTransactionId(input));
}

function saleRefusal(reason: string | undefined, hint: string | undefined) {
  const known = REFUSALS_RAISED.find((r) => r === reason);
  if (known === undefined) return undefined;
  return known === 'duplicate_transaction' ? refused({ reason: known, saleId: hint ?? '' }) : refused({ reason: known });
}
