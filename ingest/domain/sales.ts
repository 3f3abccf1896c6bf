import { sql, type Queryable } from '../../core/db.js';
import { refused, type Refusal } from './errors.js';
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
};

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
  let row: { outcome: RecordedSale } | undefined;
  try {
    row = await db.one<{ outcome: RecordedSale }>(q.record, [
      input.programId,
      input.transactionId ?? testTransactionId(),
      input.amountCents ?? 0,
      input.customerKey ?? null,
      input.clickId ?? null,
      input.currency,
      input.occurredAt?.toISOString() ?? null,
      input.provider ?? null,
      input.providerPaymentId ?? null,
      input.livemode ?? null,
      input.isRecurring,
      input.saleType ?? null,
      input.subscriptionId ?? null,
      input.test,
      feeBps,
    ]);
  } catch (error) {
    throw saleRefusal(error) ?? error;
  }
  const { sale, commission, converted, refusal } = row!.outcome;
  return {
    sale: { ...sale, occurred_at: new Date(sale.occurred_at), created_at: new Date(sale.created_at) },
    commission: commission && { ...commission, created_at: new Date(commission.created_at) },
    converted,
    ...(refusal ? { refusal: { reason: refusal } } : {}),
  };
}

function saleRefusal(error: unknown) {
  const e = error as { message?: string; detail?: string; hint?: string } | undefined;
  if (e?.message !== SALE_REFUSED) return undefined;
  const reason = REFUSALS_RAISED.find((r) => r === e.detail);
  if (reason === undefined) return undefined;
  return reason === 'duplicate_transaction' ? refused({ reason, saleId: e.hint ?? '' }) : refused({ reason });
}
