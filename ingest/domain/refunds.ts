import { sql, type Database, type Transaction } from '../../core/db.js';
import { commissionEvent, platformFeeEvent, saleStatusChanged, type OutboxEvent } from '../../schemas/event-contract.js';
import { refused } from './errors.js';
import { appendEvents } from './outbox.js';
import type { CommissionRow, SaleRow } from './sales.js';

export type RefundReason = 'refund' | 'chargeback';

export interface RefundInput {
  programId: number;
  transactionId: string;
  reason: RefundReason;
  refundReason: string | undefined;
}

export interface RefundOutcome {
  refundId: string;
  saleId: string;
  transactionId: string;
  reason: RefundReason;
  saleStatus: SaleRow['status'];
  commissionReversed: boolean;
  createdAt: Date;
  /** False when the sale had been refunded already: nothing new was recorded. */
  recorded: boolean;
}

const q = {
  sale: sql(
    'refunds.sale_for_update',
    `SELECT id, program_id, status, test FROM sale_events WHERE transaction_id = $1 AND program_id = $2 FOR UPDATE`,
  ),
  existing: sql(
    'refunds.by_sale',
    `SELECT r.id, r.reason, r.created_at, EXISTS (SELECT 1 FROM commissions c WHERE c.sale_id = r.sale_id AND c.status = 'reversed') AS reversed
       FROM refunds r WHERE r.sale_id = $1`,
  ),
  insert: sql(
    'refunds.insert',
    `INSERT INTO refunds (sale_id, program_id, reason, refund_reason) VALUES ($1, $2, $3, $4) RETURNING id, created_at`,
  ),
  saleStatus: sql(
    'sales.set_status',
    `UPDATE sale_events SET status = $2, updated_at = now() WHERE id = $1 RETURNING updated_at`,
  ),
  reverseCommission: sql(
    'commissions.reverse',
    `UPDATE commissions SET status = 'reversed', reversed_at = now() WHERE sale_id = $1 AND status = 'pending'
     RETURNING id, sale_id, program_id, partner_id, amount_cents, currency, status, created_at, reversed_at`,
  ),
  reverseFee: sql(
    'platform_fees.reverse',
    `UPDATE platform_fees SET status = 'reversed', reversed_at = now() WHERE sale_id = $1 AND status = 'charged'
     RETURNING id, amount_cents, created_at`,
  ),
};

/** A full refund or chargeback of a recorded sale: the sale changes status, its commission and fee are reversed. */
export async function recordRefund(db: Database, input: RefundInput): Promise<RefundOutcome> {
  return db.transaction((tx) => recordRefundIn(tx, input));
}

/** recordRefund inside the caller's transaction (a processor refund or dispute commits with its event row). */
export async function recordRefundIn(tx: Transaction, input: RefundInput): Promise<RefundOutcome> {
  const sale = await tx.one<{ id: string; program_id: number; status: SaleRow['status']; test: boolean }>(q.sale, [
    input.transactionId,
    input.programId,
  ]);
  if (!sale) throw refused({ reason: 'sale_not_found' });
  const base = { saleId: sale.id, transactionId: input.transactionId };
  if (sale.status !== 'paid') {
    // Refunds are idempotent: the first one stands.
    const prior = (await tx.one<{ id: string; reason: RefundReason; created_at: Date; reversed: boolean }>(q.existing, [sale.id]))!;
    return { ...base, refundId: prior.id, reason: prior.reason, saleStatus: sale.status, commissionReversed: prior.reversed, createdAt: prior.created_at, recorded: false };
  }
  const refund = (await tx.one<{ id: string; created_at: Date }>(q.insert, [sale.id, sale.program_id, input.reason, input.refundReason ?? null]))!;
  const saleStatus = input.reason === 'refund' ? 'refunded' : 'chargeback';
  await tx.many(q.saleStatus, [sale.id, saleStatus]);
  const commission = await tx.one<CommissionRow & { reversed_at: Date }>(q.reverseCommission, [sale.id]);
  const events: OutboxEvent[] = [saleStatusChanged({ sale, transactionId: input.transactionId, status: saleStatus, reason: input.reason, refund })];
  if (commission) {
    events.push(commissionEvent('commission.reversed', commission, commission.reversed_at));
    const fee = await tx.one<{ id: string; amount_cents: number; created_at: Date }>(q.reverseFee, [sale.id]);
    if (fee) events.push(platformFeeEvent('platform_fee.reversed', commission, fee, commission.reversed_at));
  }
  await appendEvents(tx, events);
  return { ...base, refundId: refund.id, reason: input.reason, saleStatus, commissionReversed: commission !== undefined, createdAt: refund.created_at, recorded: true };
}
