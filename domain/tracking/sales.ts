import { sql, type Database, type Queryable } from '../../core/db.js';
import { DomainError, type Refusal } from '../errors.js';
import { trackingWrite } from './tracking-writes.js';
import type { Currency } from '../payments/providers.js';

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
  /** additional_data.promo_code (issue 31): read by record_sale only when the customer has no attribution. */
  promoCode?: string | undefined;
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

/** The sale as record_sale reads it; a test sale without a transaction_id gets one here, once. */
const saleItem = (i: SaleInput) => (i.promoCode === undefined ? saleFields(i) : Object.assign(saleFields(i), { promo_codes: [i.promoCode] }));
// promo_codes only when sent: record_sale looks promo codes up only for an item that has the key.
const saleFields = (i: SaleInput) => ({
  program_id: i.programId,
  transaction_id: i.transactionId ?? testTransactionId(),
  amount_cents: i.amountCents ?? 0,
  customer_key: i.customerKey ?? null,
  click_id: i.clickId ?? null,
  currency: i.currency,
  occurred_at: i.occurredAt?.toISOString() ?? null,
  provider: i.provider ?? null,
  provider_payment_id: i.providerPaymentId ?? null,
  livemode: i.livemode ?? null,
  is_recurring: i.isRecurring,
  sale_type: i.saleType ?? null,
  subscription_id: i.subscriptionId ?? null,
  test: i.test,
});

function saleOutcome(result: unknown): SaleOutcome {
  const { sale, commission, converted, refusal } = result as RecordedSale;
  return {
    sale: { ...sale, occurred_at: new Date(sale.occurred_at), created_at: new Date(sale.created_at) },
    commission: commission && { ...commission, created_at: new Date(commission.created_at) },
    converted,
    ...(refusal ? { refusal: { reason: refusal } } : {}),
  };
}

const sales = trackingWrite('sale', saleItem, saleOutcome);

/**
 * Records a sale with its customer, commission, platform fee and outbox events: one statement,
 * atomic on its own or in the caller's transaction. The rules are in record_sale.
 */
export const recordSale = (db: Queryable, input: SaleInput, feeBps: number): Promise<SaleOutcome> => sales.one(db, input, feeBps);

const noteCollision = sql(
  'transaction_id_collisions.note',
  `INSERT INTO transaction_id_collisions (program_id, transaction_id) VALUES ($1, $2)
   ON CONFLICT (program_id, transaction_id)
   DO UPDATE SET attempts = transaction_id_collisions.attempts + 1, last_seen_at = now()`,
);

/**
 * POST /track/sale's writer: concurrent sales in one statement and one commit (tracking-writes.ts).
 * A real sale refused because another program holds its transaction_id is noted for the refused
 * program, which sees it in readiness (never the other program's sale).
 */
export function createSaleWriter(db: Database, feeBps: number): (input: SaleInput) => Promise<SaleOutcome> {
  const write = sales.batched(db, feeBps);
  return async (input) => {
    try {
      return await write(input);
    } catch (error) {
      if (error instanceof DomainError && error.refusal.reason === 'duplicate_transaction' && error.refusal.saleId === null) {
        // A real sale always has its transaction_id (only test sales may leave it out).
        await db.many(noteCollision, [input.programId, input.transactionId]);
      }
      throw error;
    }
  };
}
