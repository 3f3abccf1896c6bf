import { sql, type Database, type Queryable } from '../../core/db.js';
import type { SaleRow } from './sales.js';
import { trackingWrite } from './tracking-writes.js';
export type RefundReason = 'refund' | 'chargeback';

export interface RefundInput {
  programId: number;
  transactionId: string;
  /** The sale's mode, when known (a processor event's): only that sale. Undefined: the real sale first (/track/refund names no mode). */
  test?: boolean;
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

/** What record_refund returns (times as ISO strings). */
interface RecordedRefund {
  refund_id: string;
  sale_id: string;
  transaction_id: string;
  reason: RefundReason;
  sale_status: SaleRow['status'];
  commission_reversed: boolean;
  created_at: string;
  recorded: boolean;
}

const refundItem = (i: RefundInput) => ({
  program_id: i.programId,
  transaction_id: i.transactionId,
  ...(i.test === undefined ? {} : { test: i.test }),
  reason: i.reason,
  refund_reason: i.refundReason ?? null,
});

function refundOutcome(result: unknown): RefundOutcome {
  const r = result as RecordedRefund;
  return {
    refundId: r.refund_id,
    saleId: r.sale_id,
    transactionId: r.transaction_id,
    reason: r.reason,
    saleStatus: r.sale_status,
    commissionReversed: r.commission_reversed,
    createdAt: new Date(r.created_at),
    recorded: r.recorded,
  };
}

const refunds = trackingWrite('refund', refundItem, refundOutcome);

/**
 * A full refund or chargeback of a recorded sale: the sale changes status, its commission and fee
 * are reversed. One statement, atomic on its own or in the caller's transaction; the rules are in
 * record_refund (schemas/postgres/functions/record_refund.sql).
 */
export const recordRefund = (db: Queryable, input: RefundInput): Promise<RefundOutcome> => refunds.one(db, input);

/** POST /track/refund's writer: concurrent refunds in one statement and one commit (tracking-writes.ts). */
export const createRefundWriter = (db: Database) => refunds.batched(db);

export interface PartialRefundInput {
  programId: number;
  transactionId: string;
  /** The sale's mode: a processor refund reverses only the sale of its own mode. */
  test: boolean;
  /** The charge's refunded total, as the processor reports it (cumulative), and its amount: 0 < refunded < charged. */
  refundedCents: number;
  chargeCents: number;
}

export interface PartialRefundOutcome {
  saleId: string;
  saleStatus: SaleRow['status'];
  /** The sale's refunded total after this call. */
  refundedCents: number;
  /** False when this total (or a higher one) was applied already, or the sale is refunded in full: nothing changed. */
  recorded: boolean;
}

const partial = sql('refunds.record_partial', `SELECT record_partial_refund($1::jsonb) AS result`);

/**
 * A processor's partial refund: the share of the sale, its commission and fee not taken off yet.
 * The rules and the rounding are in record_partial_refund (schemas/postgres/functions/record_partial_refund.sql).
 */
export async function recordPartialRefund(db: Queryable, input: PartialRefundInput): Promise<PartialRefundOutcome> {
  const row = await db.one<{ result: { sale_id: string; sale_status: SaleRow['status']; refunded_cents: number; recorded: boolean } }>(partial, [
    JSON.stringify({ program_id: input.programId, transaction_id: input.transactionId, test: input.test, refunded_cents: input.refundedCents, charge_cents: input.chargeCents }),
  ]);
  const r = row!.result;
  return { saleId: r.sale_id, saleStatus: r.sale_status, refundedCents: Number(r.refunded_cents), recorded: r.recorded };
}
