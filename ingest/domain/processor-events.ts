import { isUniqueViolation, sql, type Database, type Transaction } from '../../core/db.js';
import { customerChanged } from '../../schemas/event-contract.js';
import { lockClick, lockCustomerByClick, lockCustomerByKey, updateCustomer, type CustomerRow } from './customers.js';
import { DomainError } from './errors.js';
import { appendEvents } from './outbox.js';
import { applyAccountEvent, connectedPrograms } from './processor-connections.js';
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
} from './processor-objects.js';
import { recordPartialRefund, recordRefund } from './refunds.js';
import { recordSale } from './sales.js';

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
            waiting_for = $7, payload = $8, updated_at = now()
      WHERE event_id = $1`,
  ),
  // Waiting on one of these ids, or on any other id known to pay the same transaction.
  waiting: sql(
    'processor_events.waiting_for_refs',
    `SELECT event_id, payload FROM processor_events
      WHERE outcome = 'waiting'
        AND (waiting_for && $1::text[] OR waiting_for && ARRAY(SELECT ref FROM processor_payment_refs WHERE transaction_id = $2))
      ORDER BY event_created_at, event_id FOR UPDATE`,
  ),
  // Serializes the events of one payment across connections (see lockPayment): the keys are
  // locked in the order given, one round trip.
  lock: sql('processor.lock', `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) AS locked FROM unnest($1::text[]) AS k`),
  addRefs: sql(
    'processor_payment_refs.add',
    `INSERT INTO processor_payment_refs (ref, transaction_id) SELECT unnest($1::text[]), $2 ON CONFLICT (ref) DO NOTHING`,
  ),
  transactionOf: sql(
    'processor_payment_refs.transaction',
    `SELECT transaction_id FROM processor_payment_refs WHERE ref = ANY($1::text[]) ORDER BY transaction_id LIMIT 1`,
  ),
  saleProgram: sql('processor.sale_program', `SELECT program_id FROM sale_events WHERE transaction_id = $1`),
  programExists: sql('processor.program_exists', `SELECT id FROM programs WHERE id = $1`),
  customerByEmail: sql(
    'processor.customer_by_email',
    `SELECT click_id, customer_key FROM customers WHERE program_id = $1 AND lower(email) = lower($2) ORDER BY id LIMIT 1`,
  ),
  customerByProcessorId: sql(
    'processor.customer_by_processor_id',
    `SELECT c.click_id, c.customer_key FROM processor_customers pc JOIN customers c ON c.id = pc.customer_id
      WHERE pc.program_id = $1 AND pc.processor_customer_id = $2`,
  ),
  rememberCustomer: sql(
    'processor_customers.remember',
    `INSERT INTO processor_customers (program_id, processor_customer_id, customer_id) VALUES ($1, $2, $3)
     ON CONFLICT (program_id, processor_customer_id) DO NOTHING`,
  ),
};

export interface ProcessorDeps {
  feeBps: number;
}

/**
 * Applies one signed processor event exactly once: its row (keyed by the event id) and its
 * effects commit in one transaction, so a repeat finds the row and changes nothing.
 */
export async function handleProcessorEvent(db: Database, event: ProcessorEvent, deps: ProcessorDeps): Promise<EventResult> {
  try {
    return await db.transaction(async (tx) => {
      const claimed = (await tx.one<{ inserted: boolean; outcome: Applied['outcome']; reason: string | null; program_id: number | null; sale_id: string | null; transaction_id: string | null }>(
        q.claim,
        [event.id, event.type, event.account ?? null, event.livemode, event.created],
      ))!;
      if (!claimed.inserted) {
        return { outcome: 'duplicate', reason: claimed.outcome, programId: claimed.program_id, saleId: claimed.sale_id, transactionId: claimed.transaction_id };
      }
      const applied = await apply(tx, event, deps);
      await settleRow(tx, event, applied);
      return { outcome: applied.outcome, reason: applied.reason, programId: applied.programId, saleId: applied.saleId, transactionId: applied.transactionId };
    });
  } catch (error) {
    // Two deliveries of one event raced past the claim on different connections: the later is the duplicate.
    if (isUniqueViolation(error, 'processor_events_pkey')) return handleProcessorEvent(db, event, deps);
    throw error;
  }
}

async function settleRow(tx: Transaction, event: ProcessorEvent, a: Applied) {
  const waiting = a.outcome === 'waiting';
  await tx.many(q.settle, [
    event.id, a.outcome, a.reason, a.programId, a.saleId, a.transactionId,
    waiting ? a.waitingFor : null, waiting ? JSON.stringify(event) : null,
  ]);
}

const result = (outcome: Applied['outcome'], reason: string | null, more: Partial<Applied> = {}): Applied => ({
  outcome, reason, programId: null, saleId: null, transactionId: null, ...more,
});

async function apply(tx: Transaction, event: ProcessorEvent, deps: ProcessorDeps): Promise<Applied> {
  const object = event.data.object;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return payment(tx, event, readCheckoutSession(object), deps);
    case 'invoice.payment_succeeded':
      return payment(tx, event, readInvoice(object), deps);
    case 'invoice_payment.paid': {
      const paid = readInvoicePayment(object);
      if (!paid) return result('skipped', 'unreadable_object');
      await lockPayment(tx, [paid.invoiceId, ...paid.refs], paid.invoiceId);
      await addRefs(tx, [paid.invoiceId, ...paid.refs], paid.invoiceId);
      return result('recorded', null, { transactionId: paid.invoiceId });
    }
    case 'charge.refunded':
      return reversal(tx, event, readCharge(object));
    case 'charge.dispute.created':
      return reversal(tx, event, readDispute(object));
    case 'account.updated': {
      const account = readAccount(object);
      if (!account) return result('skipped', 'unreadable_object');
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

/** The program an event is for: the connected account's program (named by metadata when it has several), or metadata alone. */
async function resolveProgram(tx: Transaction, event: ProcessorEvent, metadataProgramId: string | undefined): Promise<number | string> {
  const named = metadataProgramId !== undefined && /^\d{1,15}$/.test(metadataProgramId) ? Number(metadataProgramId) : undefined;
  if (metadataProgramId !== undefined && named === undefined) return 'unknown_program';
  if (event.account) {
    const programs = await connectedPrograms(tx, event.account);
    if (programs.length === 0) return 'account_not_connected';
    if (named !== undefined) return programs.includes(named) ? named : 'program_not_connected';
    return programs.length === 1 ? programs[0]! : 'program_id_missing';
  }
  if (named === undefined) return 'program_id_missing';
  return (await tx.one(q.programExists, [named])) ? named : 'unknown_program';
}

type Reference = { clickId: string; customerKey?: undefined } | { customerKey: string; clickId?: undefined };

/** Partner resolution in the spec's order: click id, email of the lead record, processor customer seen before, customer key alone. */
async function resolveCustomer(tx: Transaction, programId: number, p: Extract<PaymentReading, { kind: 'payment' }>): Promise<Reference | undefined> {
  if (p.metadata.clickId !== undefined) {
    const click = await lockClick(tx, p.metadata.clickId);
    if (click && click.program_id === programId) return { clickId: click.click_id };
  }
  const known = async (row: { click_id: string | null; customer_key: string | null } | undefined): Promise<Reference | undefined> => {
    if (row?.click_id) return { clickId: row.click_id };
    if (row?.customer_key) return { customerKey: row.customer_key };
    return undefined;
  };
  if (p.email !== undefined) {
    const found = await known(await tx.one(q.customerByEmail, [programId, p.email]));
    if (found) return found;
  }
  if (p.processorCustomerId !== undefined) {
    const found = await known(await tx.one(q.customerByProcessorId, [programId, p.processorCustomerId]));
    if (found) return found;
  }
  if (p.metadata.customerKey !== undefined && (await lockCustomerByKey(tx, programId, p.metadata.customerKey))) {
    return { customerKey: p.metadata.customerKey };
  }
  return undefined;
}

async function lockCustomer(tx: Transaction, programId: number, ref: Reference): Promise<CustomerRow | undefined> {
  return ref.clickId !== undefined ? lockCustomerByClick(tx, ref.clickId) : lockCustomerByKey(tx, programId, ref.customerKey);
}

async function payment(tx: Transaction, event: ProcessorEvent, p: PaymentReading, deps: ProcessorDeps): Promise<Applied> {
  const program = await resolveProgram(tx, event, p.kind === 'payment' ? p.metadata.programId : p.programId);
  if (typeof program === 'string') return result('skipped', program);
  if (p.kind === 'skip') return result('skipped', p.reason, { programId: program });
  await lockPayment(tx, p.refs, p.transactionId);
  const base = {
    programId: program,
    transactionId: p.transactionId,
    amountCents: p.amountCents,
    currency: p.currency,
    occurredAt: new Date(event.created * 1000),
    provider: 'processor',
    providerPaymentId: p.providerPaymentId,
    livemode: event.livemode,
    isRecurring: p.isRecurring,
    saleType: p.saleType,
    subscriptionId: p.subscriptionId,
  };
  // The ids of this payment lead to its transaction_id whatever becomes of it (a refund may wait on them).
  const done = async (a: Applied) => {
    await addRefs(tx, p.refs, p.transactionId);
    return a;
  };
  if (!event.livemode) {
    const test = await tx.savepoint('processor_test_sale', () => recordSale(tx, { ...base, customerKey: undefined, clickId: undefined, test: true }, deps.feeBps));
    if (!test.ok) return done(refusalResult(test.error, program, p.transactionId));
    return done(result('recorded', null, { programId: program, saleId: test.value.sale.id, transactionId: p.transactionId }));
  }
  const reference = await resolveCustomer(tx, program, p);
  if (!reference) {
    const hasMetadata = p.metadata.clickId !== undefined || p.metadata.customerKey !== undefined;
    return done(result('skipped', hasMetadata ? 'no_attribution' : 'missing_metadata', { programId: program, transactionId: p.transactionId }));
  }
  const before = await lockCustomer(tx, program, reference);
  const sale = await tx.savepoint('processor_sale', () => recordSale(tx, { ...base, ...reference, customerKey: reference.customerKey, clickId: reference.clickId, test: false }, deps.feeBps));
  if (before?.provisional) await settleProvisional(tx, before, p);
  if (!sale.ok) return done(refusalResult(sale.error, program, p.transactionId));
  const { sale: row, refusal } = sale.value;
  if (p.processorCustomerId !== undefined && row.customer_id !== null) {
    await tx.many(q.rememberCustomer, [program, p.processorCustomerId, row.customer_id]);
  }
  return done(result('recorded', refusal?.reason ?? null, { programId: program, saleId: row.id, transactionId: p.transactionId }));
}

function refusalResult(error: unknown, programId: number, transactionId: string): Applied {
  if (!(error instanceof DomainError)) throw error;
  const refusal = error.refusal;
  if (refusal.reason === 'duplicate_transaction') return result('skipped', 'duplicate_payment', { programId, saleId: refusal.saleId, transactionId });
  return result('skipped', refusal.reason, { programId, transactionId });
}

/** A provisional lead resolvable from a processor payment is settled; its customer key and email are kept when free. */
async function settleProvisional(tx: Transaction, before: CustomerRow, p: Extract<PaymentReading, { kind: 'payment' }>) {
  const current = (await lockCustomer(tx, before.program_id, before.click_id ? { clickId: before.click_id } : { customerKey: before.customer_key! }))!;
  const change = { status: current.status, provisional: false, firstPurchaseDate: current.first_purchase_date, email: p.email ?? null };
  const withKey = await tx.savepoint('processor_settle', () => updateCustomer(tx, current, { ...change, customerKey: p.metadata.customerKey ?? null }));
  // The key already names another customer of the program: settle without it.
  const settled = withKey.ok ? withKey.value : await updateCustomer(tx, current, change);
  await appendEvents(tx, [customerChanged(settled, 'settled')]);
}

/**
 * A refund or dispute. `locked`: applied from inside the transaction of the payment it waited
 * for, which holds that payment's locks already.
 */
async function reversal(tx: Transaction, event: ProcessorEvent, r: ReversalReading, locked = false): Promise<Applied> {
  if (r.kind === 'skip') return result('skipped', r.reason);
  if (!locked) await lockPayment(tx, r.refs);
  const mapped = await tx.one<{ transaction_id: string }>(q.transactionOf, [r.refs]);
  if (mapped && !locked) await lockPayment(tx, [], mapped.transaction_id);
  const sale = mapped && (await tx.one<{ program_id: number }>(q.saleProgram, [mapped.transaction_id]));
  if (!mapped || !sale) return result('waiting', 'payment_not_recorded_yet', { waitingFor: r.refs });
  const found = { transaction_id: mapped.transaction_id, program_id: Number(sale.program_id) };
  if (event.account && !(await connectedPrograms(tx, event.account)).includes(found.program_id)) {
    return result('skipped', 'program_not_connected');
  }
  const at = { programId: found.program_id, transactionId: found.transaction_id };
  if (!r.full) {
    // The charge's refunded total so far (cumulative): only what no earlier event applied is taken off.
    if (r.refundedCents <= 0) return result('skipped', 'nothing_refunded', at);
    const partial = await recordPartialRefund(tx, { ...at, refundedCents: r.refundedCents, chargeCents: r.amountCents });
    return result(partial.recorded ? 'recorded' : 'skipped', partial.recorded ? null : 'already_reversed', { ...at, saleId: partial.saleId });
  }
  const refund = await recordRefund(tx, { programId: found.program_id, transactionId: found.transaction_id, reason: r.reason, refundReason: r.note });
  return result(refund.recorded ? 'recorded' : 'skipped', refund.recorded ? null : 'already_reversed', { ...at, saleId: refund.saleId });
}

/**
 * The events of one payment (its sale, the ids that map to it, its refunds) run one at a time
 * across connections, so a refund committed while its sale is being recorded is never left
 * waiting. Locks are taken in one order (the ids sorted, then the transaction), so two events
 * never wait on each other.
 */
async function lockPayment(tx: Transaction, refs: string[], transactionId?: string) {
  const keys = [...new Set(refs)].sort().map((ref) => `ref:${ref}`);
  if (transactionId !== undefined) keys.push(`txn:${transactionId}`);
  if (keys.length) await tx.many(q.lock, [keys]);
}

/** Records which processor ids lead to a transaction, then applies the refunds and disputes that were waiting for it. */
async function addRefs(tx: Transaction, refs: string[], transactionId: string) {
  await tx.many(q.addRefs, [refs, transactionId]);
  const waiting = await tx.many<{ event_id: string; payload: ProcessorEvent }>(q.waiting, [refs, transactionId]);
  for (const w of waiting) {
    const event = w.payload;
    const reading = event.type === 'charge.refunded' ? readCharge(event.data.object) : readDispute(event.data.object);
    const applied = await reversal(tx, event, reading, true);
    if (applied.outcome !== 'waiting') await settleRow(tx, event, applied);
  }
}
