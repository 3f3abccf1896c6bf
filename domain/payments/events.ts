import { isUniqueViolation, sql, type Database, type Transaction } from '../../core/db.js';
import { createBatchedStatement, type ItemResult } from '../batched-statement.js';
import { accountScope, scopeJson, scopeOf, type EventScope } from './account-owners.js';
import { applyAccountEvent } from './connections.js';
import {
  readAccount,
  readCharge,
  readCheckoutSession,
  readDispute,
  readInvoice,
  readInvoicePayment,
  type PaymentReading,
  type ProcessorEvent,
  type ReversalReading,
} from './objects.js';
import { recordPartialRefund, recordRefund } from '../tracking/refunds.js';

/**
 * What became of a processor event. recorded: its effects were applied; skipped: nothing applied,
 * `reason` says why; ignored: a type this service does not handle; waiting: a refund or dispute
 * whose payment is not known yet (applied when it is); duplicate: this event id was handled before.
 */
export interface EventResult {
  outcome: 'recorded' | 'skipped' | 'ignored' | 'waiting' | 'duplicate';
  reason: string | null;
  programId: number | null;
  saleId: string | null;
  transactionId: string | null;
}

type Applied = Omit<EventResult, 'outcome'> & { outcome: Exclude<EventResult['outcome'], 'duplicate'>; waitingFor?: string[] };

const q = {
  // The event row is claimed first: a concurrent delivery of the same id waits here, then sees it.
  claim: sql(
    'processor_events.claim',
    `INSERT INTO processor_events (event_id, event_type, account_id, livemode, outcome, event_created_at)
     VALUES ($1, $2, $3, $4, 'ignored', to_timestamp($5))
     ON CONFLICT (event_id) DO UPDATE SET deliveries = processor_events.deliveries + 1, updated_at = now()
     RETURNING (xmax = 0) AS inserted, outcome, reason, program_id, sale_id, transaction_id`,
  ),
  settle: sql(
    'processor_events.settle',
    `UPDATE processor_events SET outcome = $2, reason = $3, program_id = $4, sale_id = $5, transaction_id = $6,
            waiting_for = $7, payload = $8, scope = $9, updated_at = now()
      WHERE event_id = $1`,
  ),
  // Payment events, each claimed, applied and settled by one function call
  // (schemas/postgres/functions/record_processor_payment.sql).
  payment: sql('processor.record_payment', `SELECT record_processor_payment($1::jsonb, $2, true) AS result`),
  payments: sql('processor.record_payments', `SELECT record_processor_payments($1::jsonb, $2) AS results`),
  // Serializes the events of one payment across connections (see lockPayment): the keys are
  // locked in the order given, one round trip.
  lock: sql('processor.lock', `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) AS locked FROM unnest($1::text[]) AS k`),
  // Test and live payments keep their ids apart (0024): a refund finds a payment of its own mode.
  transactionOf: sql(
    'processor_payment_refs.transaction',
    `SELECT transaction_id FROM processor_payment_refs WHERE ref = ANY($1::text[]) AND livemode = $2 ORDER BY transaction_id LIMIT 1`,
  ),
  // A real and a test sale may share a transaction_id (0010): a live event refunds the real one,
  // a test event a test one; among test sales (unique per program) one the event may act on first.
  saleProgram: sql(
    'processor.sale_program',
    `SELECT program_id FROM sale_events WHERE transaction_id = $1 AND test = $2
      ORDER BY coalesce(program_id = ANY($3::bigint[]), false) DESC, program_id LIMIT 1`,
  ),
};

export interface ProcessorDeps {
  feeBps: number;
}

/**
 * Applies signed processor events, each exactly once: its row (keyed by the event id) and its
 * effects commit in one transaction, so a repeat finds the row and changes nothing. Payment events
 * go by group commit, one statement for those that arrive together (createPaymentWriter); the
 * others take a transaction here.
 */
export function createProcessorEventHandler(db: Database, deps: ProcessorDeps): (event: ProcessorEvent, scope: EventScope) => Promise<EventResult> {
  const writePayment = createPaymentWriter(db, deps.feeBps);
  const handle = async (event: ProcessorEvent, scope: EventScope): Promise<EventResult> => {
    const payment = paymentEvent(event, scope);
    if (payment) return paymentResult(await writePayment(payment));
    try {
      return await db.transaction(async (tx) => {
        const claimed = (await tx.one<{ inserted: boolean; outcome: Applied['outcome']; reason: string | null; program_id: number | null; sale_id: string | null; transaction_id: string | null }>(
          q.claim,
          [event.id, event.type, event.account ?? null, event.livemode, event.created],
        ))!;
        if (!claimed.inserted) {
          return { outcome: 'duplicate', reason: claimed.outcome, programId: claimed.program_id, saleId: claimed.sale_id, transactionId: claimed.transaction_id };
        }
        const applied = await apply(tx, event, scope);
        await settleRow(tx, event, applied, scope);
        return { outcome: applied.outcome, reason: applied.reason, programId: applied.programId, saleId: applied.saleId, transactionId: applied.transactionId };
      });
    } catch (error) {
      // Two deliveries of one event raced past the claim on different connections: the later is the duplicate.
      if (isUniqueViolation(error, 'processor_events_pkey')) return handle(event, scope);
      throw error;
    }
  };
  return handle;
}

async function settleRow(tx: Transaction, event: ProcessorEvent, a: Applied, scope: EventScope) {
  const waiting = a.outcome === 'waiting';
  await tx.many(q.settle, [
    event.id, a.outcome, a.reason, a.programId, a.saleId, a.transactionId,
    waiting ? a.waitingFor : null, waiting ? JSON.stringify(event) : null, waiting ? JSON.stringify(scopeJson(scope)) : null,
  ]);
}

const result = (outcome: Applied['outcome'], reason: string | null, more: Partial<Applied> = {}): Applied => ({
  outcome, reason, programId: null, saleId: null, transactionId: null, ...more,
});

/** The events other than payments (createPaymentWriter), in the transaction that claimed their row. */
async function apply(tx: Transaction, event: ProcessorEvent, scope: EventScope): Promise<Applied> {
  const object = event.data.object;
  switch (event.type) {
    case 'charge.refunded':
      return reversal(tx, event, readCharge(object), scope);
    case 'charge.dispute.created':
      return reversal(tx, event, readDispute(object), scope);
    case 'account.updated': {
      const account = readAccount(object);
      if (!account) return result('skipped', 'unreadable_object');
      // An account's own URL reports on that account only.
      if (scope.channel === 'account' && account.accountId !== scope.accountId) return result('skipped', 'other_account');
      await applyAccountEvent(tx, { kind: 'updated', ...account, at: event.created });
      return result('recorded', null);
    }
    case 'account.application.deauthorized':
      if (!event.account) return result('skipped', 'no_account');
      await applyAccountEvent(tx, { kind: 'deauthorized', accountId: event.account, at: event.created });
      return result('recorded', null);
    default:
      return result('ignored', 'unhandled_type');
  }
}

/**
 * A refund or dispute. `locked`: applied from inside the transaction of the payment it waited
 * for, which holds that payment's locks already.
 */
async function reversal(tx: Transaction, event: ProcessorEvent, r: ReversalReading, scope: EventScope, locked = false): Promise<Applied> {
  if (r.kind === 'skip') return result('skipped', r.reason);
  if (!locked) await lockPayment(tx, r.refs);
  const mapped = await tx.one<{ transaction_id: string }>(q.transactionOf, [r.refs, event.livemode]);
  if (mapped && !locked) await lockPayment(tx, [], mapped.transaction_id);
  // An account's events act only on the programs its workspace connected to it (processor_event_program's rule).
  const allowed = event.account ? await accountScope(tx, event.account, scope) : undefined;
  const sale = mapped && (await tx.one<{ program_id: number }>(q.saleProgram, [mapped.transaction_id, !event.livemode, allowed?.programs ?? null]));
  if (!mapped || !sale) return result('waiting', 'payment_not_recorded_yet', { waitingFor: r.refs });
  const found = { transaction_id: mapped.transaction_id, program_id: Number(sale.program_id) };
  if (allowed?.workspace === null) return result('skipped', 'account_not_verified');
  if (allowed && !allowed.programs.includes(found.program_id)) return result('skipped', 'program_not_connected');
  const at = { programId: found.program_id, transactionId: found.transaction_id };
  // The sale of the event's own mode only: a test refund never reverses a live sale under the same id, nor the reverse.
  const test = !event.livemode;
  if (!r.full) {
    // The charge's refunded total so far (cumulative): only what no earlier event applied is taken off.
    if (r.refundedCents <= 0) return result('skipped', 'nothing_refunded', at);
    const partial = await recordPartialRefund(tx, { ...at, test, refundedCents: r.refundedCents, chargeCents: r.amountCents });
    return result(partial.recorded ? 'recorded' : 'skipped', partial.recorded ? null : 'already_reversed', { ...at, saleId: partial.saleId });
  }
  const refund = await recordRefund(tx, { programId: found.program_id, transactionId: found.transaction_id, test, reason: r.reason, refundReason: r.note });
  return result(refund.recorded ? 'recorded' : 'skipped', refund.recorded ? null : 'already_reversed', { ...at, saleId: refund.saleId });
}

/**
 * The events of one payment (its sale, the ids that map to it, its refunds) run one at a time
 * across connections, so a refund committed while its sale is being recorded is never left
 * waiting. Locks are taken in one order (the ids sorted, then the transaction), so two events
 * never wait on each other.
 */
async function lockPayment(tx: Transaction, refs: string[], transactionId?: string) {
  const keys = lockKeys(refs, transactionId);
  if (keys.length) await tx.many(q.lock, [keys]);
}

/** The advisory lock keys of a payment, in the one order (record_processor_payment takes these too). */
function lockKeys(refs: string[], transactionId?: string): string[] {
  const keys = [...new Set(refs)].sort().map((ref) => `ref:${ref}`);
  if (transactionId !== undefined) keys.push(`txn:${transactionId}`);
  return keys;
}

/**
 * Payment events, as record_processor_payment reads them (schemas/postgres/functions/): the object read
 * here, its effects applied there in one statement. Undefined: not a payment event.
 */
function paymentEvent(event: ProcessorEvent, scope: EventScope): object | undefined {
  const head = { id: event.id, type: event.type, account: event.account ?? null, livemode: event.livemode, created: event.created, scope: scopeJson(scope) };
  const object = event.data.object;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return { ...head, ...paymentReading(event, readCheckoutSession(object)) };
    case 'invoice.payment_succeeded':
      return { ...head, ...paymentReading(event, readInvoice(object)) };
    case 'invoice_payment.paid': {
      // Which payment ids paid an invoice: they lead to its transaction_id.
      const paid = readInvoicePayment(object);
      if (!paid) return { ...head, locks: [], reading: { kind: 'unreadable' } };
      const refs = [paid.invoiceId, ...paid.refs];
      return { ...head, locks: lockKeys(refs, paid.invoiceId), reading: { kind: 'refs', transaction_id: paid.invoiceId, refs } };
    }
    default:
      return undefined;
  }
}

function paymentReading(event: ProcessorEvent, p: PaymentReading) {
  if (p.kind === 'skip') return { locks: [], reading: { kind: 'skip', reason: p.reason, program: p.programId ?? null } };
  return {
    locks: lockKeys(p.refs, p.transactionId),
    reading: {
      kind: 'payment',
      program: p.metadata.programId ?? null,
      transaction_id: p.transactionId,
      refs: p.refs,
      click_id: p.metadata.clickId ?? null,
      customer_key: p.metadata.customerKey ?? null,
      email: p.email ?? null,
      processor_customer_id: p.processorCustomerId ?? null,
      // Issue 31: a customer with no attribution yet is attributed to the partner of a promo code (record_sale).
      promo_codes: p.promotions.promoCodes,
      promotion_ids: p.promotions.promotionIds,
      // record_sale's item (sales.ts), but for the program, the date, the customer and test mode, decided there.
      sale: {
        transaction_id: p.transactionId,
        amount_cents: p.amountCents,
        currency: p.currency,
        provider: 'processor',
        provider_payment_id: p.providerPaymentId ?? null,
        livemode: event.livemode,
        is_recurring: p.isRecurring,
        sale_type: p.saleType,
        subscription_id: p.subscriptionId ?? null,
      },
    },
  };
}

/** What record_processor_payment returns. */
interface RecordedPayment {
  outcome: EventResult['outcome'];
  reason: string | null;
  program_id: number | null;
  sale_id: string | null;
  transaction_id: string | null;
  waiting: { event_id: string; payload: ProcessorEvent; scope: Parameters<typeof scopeOf>[0] }[] | null;
}

/** Raised by record_processor_payment, outside a transaction, when refunds wait for the payment. */
const WAITING_EVENTS = 'waiting_events';

type PaymentAnswer = { ok: RecordedPayment } | { failed: string; message: string };

/**
 * Recorded again alone, in a transaction: an event with refunds waiting for it (its call in the
 * batch wrote nothing), and deadlocks between concurrent batches (or unique violations), where
 * the answer alone is exact.
 */
const RECORDED_AGAIN_ALONE = new Set(['40P01', '40001', '23505']);

/**
 * Payment events by group commit: the events that arrive while earlier batches run go together in
 * one record_processor_payments statement and one commit (batched-statement.ts), so the common case
 * is one round trip per batch. No event is answered before its batch has committed.
 */
function createPaymentWriter(db: Database, feeBps: number): (payment: object) => Promise<RecordedPayment> {
  return createBatchedStatement<object, RecordedPayment>(
    async (payments) => {
      const row = await db.one<{ results: PaymentAnswer[] }>(q.payments, [JSON.stringify(payments), feeBps]);
      return Promise.all(
        row!.results.map(async (answer, n): Promise<ItemResult<RecordedPayment>> => {
          if ('ok' in answer) return { ok: true, value: answer.ok };
          if ((answer.failed === 'P0001' && answer.message === WAITING_EVENTS) || RECORDED_AGAIN_ALONE.has(answer.failed)) {
            return recordPaymentAlone(db, payments[n]!, feeBps).then(
              (value) => ({ ok: true as const, value }),
              (error: unknown) => ({ ok: false as const, error }),
            );
          }
          return { ok: false, error: Object.assign(new Error(answer.message), { code: answer.failed }) };
        }),
      );
    },
    // 15: see record_processor_payments (subtransaction ids per transaction).
    { maxBatch: 15, maxInFlight: db.kind === 'pglite' ? 1 : 4 },
  );
}

/** One payment event in a transaction that also applies the refunds and disputes waiting for it. */
function recordPaymentAlone(db: Database, payment: object, feeBps: number): Promise<RecordedPayment> {
  return db.transaction(async (tx) => {
    const recorded = (await tx.one<{ result: RecordedPayment }>(q.payment, [JSON.stringify(payment), feeBps]))!.result;
    await applyWaiting(tx, recorded.waiting ?? []);
    return recorded;
  });
}

const paymentResult = (r: RecordedPayment): EventResult => ({
  outcome: r.outcome, reason: r.reason, programId: r.program_id, saleId: r.sale_id, transactionId: r.transaction_id,
});

/** The refunds and disputes that were waiting for a payment just recorded, whose locks this transaction holds. */
async function applyWaiting(tx: Transaction, waiting: RecordedPayment['waiting'] & object) {
  for (const w of waiting) {
    const event = w.payload;
    const reading = event.type === 'charge.refunded' ? readCharge(event.data.object) : readDispute(event.data.object);
    const scope = scopeOf(w.scope, event.account);
    const applied = await reversal(tx, event, reading, scope, true);
    if (applied.outcome !== 'waiting') await settleRow(tx, event, applied, scope);
  }
}
