import { isUniqueViolation, sql, type Database, type Transaction } from '../../core/db.js';
import { commissionCents, platformFeeCents, type CommissionType } from './commissions.js';
import {
  customerKeyInOtherProgram,
  insertCustomer,
  lockClick,
  lockCustomerByClick,
  lockCustomerByKey,
  updateCustomer,
  type CustomerRow,
} from './customers.js';
import { commissionEvent, customerChanged, platformFeeEvent, saleRecorded, type OutboxEvent } from '../../schemas/event-contract.js';
import { refused, type Refusal } from './errors.js';
import { appendEvents } from './outbox.js';
import type { Currency } from './payments.js';
import { logTestEvent } from './test-events.js';

const DAY_MS = 86_400_000;

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

interface ProgramTerms {
  commission_type: CommissionType;
  commission_rate: number;
  attribution_window_days: number;
}

const SALE_COLUMNS = `id, program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at,
  status, test, is_recurring, created_at`;

const q = {
  existing: sql('sales.by_transaction_id', `SELECT id FROM sale_events WHERE transaction_id = $1`),
  terms: sql(
    'programs.commission_terms',
    `SELECT commission_type, commission_rate, attribution_window_days FROM programs WHERE id = $1`,
  ),
  junction: sql('partner_programs.exists', `SELECT 1 AS found FROM partner_programs WHERE id = $1`),
  insert: sql(
    'sales.insert',
    `INSERT INTO sale_events (program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at,
                              provider, provider_payment_id, livemode, is_recurring, sale_type, subscription_id, test)
     VALUES ($1, $2, $3, $4, $5, $6, COALESCE($7, now()), $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT ON CONSTRAINT sale_events_transaction_id_key DO NOTHING
     RETURNING ${SALE_COLUMNS}`,
  ),
  commission: sql(
    'commissions.insert',
    `INSERT INTO commissions (sale_id, program_id, partner_id, customer_id, commission_type, commission_rate,
                              amount_cents, currency)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at`,
  ),
  fee: sql(
    'platform_fees.insert',
    `INSERT INTO platform_fees (sale_id, commission_id, program_id, amount_cents, currency)
     VALUES ($1, $2, $3, $4, $5)
     RETURNING id, amount_cents, currency, status, created_at`,
  ),
};

function duplicate(saleId: string) {
  return refused({ reason: 'duplicate_transaction', saleId });
}

let lastTestStamp = 0;
/** test_txn_<timestamp>, kept unique within the process when two arrive in one millisecond. */
function testTransactionId(): string {
  lastTestStamp = Math.max(Date.now(), lastTestStamp + 1);
  return `test_txn_${lastTestStamp}`;
}

export async function recordSale(db: Database, input: SaleInput, feeBps: number): Promise<SaleOutcome> {
  try {
    return await db.transaction((tx) => recordSaleIn(tx, input, feeBps));
  } catch (error) {
    // Two sales with one transaction_id raced past the check: the loser is a duplicate.
    if (isUniqueViolation(error, 'sale_events_transaction_id_key') && input.transactionId !== undefined) {
      const existing = await db.one<{ id: string }>(q.existing, [input.transactionId]);
      if (existing) throw duplicate(existing.id);
    }
    throw error;
  }
}

/** recordSale inside the caller's transaction (a processor event records its sale with its own row). */
export async function recordSaleIn(tx: Transaction, input: SaleInput, feeBps: number): Promise<SaleOutcome> {
  const transactionId = input.transactionId ?? testTransactionId();
  const existing = await tx.one<{ id: string }>(q.existing, [transactionId]);
  if (existing) throw duplicate(existing.id);
  if (input.test) return recordTestSale(tx, input, transactionId);
  return recordPaidSale(tx, input, transactionId, feeBps);
}

async function insertSale(tx: Transaction, input: SaleInput, transactionId: string, customer: CustomerRow | null) {
  const sale = await tx.one<SaleRow>(q.insert, [
    input.programId,
    customer?.id ?? null,
    customer?.partner_id ?? null,
    transactionId,
    input.amountCents ?? 0,
    input.currency,
    input.occurredAt?.toISOString() ?? null,
    input.provider ?? null,
    input.providerPaymentId ?? null,
    input.livemode ?? null,
    input.isRecurring,
    input.saleType ?? null,
    input.subscriptionId ?? null,
    input.test,
  ]);
  if (!sale) {
    const existing = await tx.one<{ id: string }>(q.existing, [transactionId]);
    throw duplicate(existing!.id);
  }
  return sale;
}

/** Test mode: a flagged sale event and a tracking-log entry; no customer needed, no commission, no fee. */
async function recordTestSale(tx: Transaction, input: SaleInput, transactionId: string): Promise<SaleOutcome> {
  const sale = await insertSale(tx, input, transactionId, null);
  await appendEvents(tx, [saleRecorded(sale)]);
  await logTestEvent(tx, sale.program_id, 'sale', sale.id);
  return { sale, commission: null, converted: false };
}

/** The customer the sale is for, in the key's program, locked; created from a click with no lead yet. */
async function resolveCustomer(tx: Transaction, input: SaleInput, occurredAt: Date): Promise<{ customer: CustomerRow; created: boolean }> {
  if (input.customerKey !== undefined) {
    const customer = await lockCustomerByKey(tx, input.programId, input.customerKey);
    if (customer) return { customer, created: false };
    if (input.clickId === undefined) {
      if (await customerKeyInOtherProgram(tx, input.programId, input.customerKey)) throw refused({ reason: 'customer_other_program' });
      throw refused({ reason: 'customer_not_found' });
    }
  }
  const click = input.clickId === undefined ? undefined : await lockClick(tx, input.clickId);
  if (!click) throw refused({ reason: 'customer_not_found' });
  if (click.program_id !== input.programId) throw refused({ reason: 'customer_other_program' });
  const customer = await lockCustomerByClick(tx, click.click_id);
  if (customer) return { customer, created: false };
  // A payment with no signup before it: the click alone carries the attribution.
  const created = await insertCustomer(tx, {
    click,
    customerKey: input.customerKey ?? null,
    email: null,
    status: 'conversion',
    provisional: false,
    test: click.test,
    firstPurchaseDate: occurredAt,
  });
  return { customer: created, created: true };
}

async function recordPaidSale(tx: Transaction, input: SaleInput, transactionId: string, feeBps: number): Promise<SaleOutcome> {
  const occurredAt = input.occurredAt ?? new Date();
  const { customer, created } = await resolveCustomer(tx, input, occurredAt);
  if (customer.partner_program_id === null || !(await tx.one(q.junction, [customer.partner_program_id]))) {
    throw refused({ reason: 'no_junction' });
  }
  const terms = (await tx.one<ProgramTerms>(q.terms, [input.programId]))!;
  const converts = created || customer.status !== 'conversion';
  if (converts && customer.click_created_at) {
    // Checked on every payment until one converts; the click may be at most the window older
    // than the signup, or than the payment when there was no signup.
    const reference = customer.signup_date ?? occurredAt;
    if (reference.getTime() - customer.click_created_at.getTime() > terms.attribution_window_days * DAY_MS) {
      throw refused({ reason: 'outside_window' });
    }
  }
  const sale = await insertSale(tx, input, transactionId, customer);
  const events: OutboxEvent[] = [saleRecorded(sale)];
  let current = customer;
  if (created) events.push(customerChanged(customer, 'conversion'));
  else if (converts) {
    current = await updateCustomer(tx, customer, {
      status: 'conversion',
      provisional: customer.provisional,
      firstPurchaseDate: customer.first_purchase_date ?? occurredAt,
    });
    events.push(customerChanged(current, 'conversion'));
  }
  if (current.partner_id === null) {
    await appendEvents(tx, events);
    return { sale, commission: null, converted: converts, refusal: { reason: 'partner_required' } };
  }
  const amount = commissionCents(terms.commission_type, terms.commission_rate, sale.amount_cents, converts);
  let commission: CommissionRow | null = null;
  let refusal: StoredSaleRefusal | undefined;
  if (amount !== null) {
    const partnerId = current.partner_id;
    const written = await tx.savepoint('commission', async () => {
      const row = (await tx.one<CommissionRow>(q.commission, [
        sale.id, sale.program_id, partnerId, current.id, terms.commission_type, terms.commission_rate, amount, sale.currency,
      ]))!;
      const fee = (await tx.one<{ id: string; amount_cents: number; created_at: Date }>(q.fee, [
        sale.id, row.id, sale.program_id, platformFeeCents(amount, feeBps), sale.currency,
      ]))!;
      return { row, fee };
    });
    if (written.ok) {
      commission = written.value.row;
      const { fee } = written.value;
      events.push(commissionEvent('commission.created', commission, commission.created_at), platformFeeEvent('platform_fee.created', commission, fee, fee.created_at));
    } else {
      // The sale stays recorded and its transaction_id consumed, as the spec describes.
      refusal = { reason: 'commission_failed' };
    }
  }
  await appendEvents(tx, events);
  return { sale, commission, converted: converts, ...(refusal ? { refusal } : {}) };
}
