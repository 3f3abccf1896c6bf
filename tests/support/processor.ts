import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import Stripe from 'stripe';
import { PROCESSOR_SECRETS } from './app.js';

/**
 * Processor (Stripe-compatible) events for tests, signed with the official package's test-header
 * helper. The newer-layout objects are typed with the package's own types, so their field names
 * are the processor's; the legacy layout (before 2025-03-31) is written out by hand.
 */

export const id = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);

export interface Metadata {
  svc_click_id?: string;
  svc_customer_key?: string;
  program_id?: string;
}

export interface EventOptions {
  account?: string;
  livemode?: boolean;
  created?: number;
  eventId?: string;
}

export function event(type: string, object: object, o: EventOptions = {}) {
  return {
    id: o.eventId ?? id('evt'),
    object: 'event',
    api_version: '2025-03-31.basil',
    created: o.created ?? now(),
    livemode: o.livemode ?? true,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    ...(o.account ? { account: o.account } : {}),
    data: { object },
  };
}

export type Session = Pick<
  Stripe.Checkout.Session,
  'id' | 'object' | 'mode' | 'payment_status' | 'status' | 'amount_total' | 'amount_subtotal' | 'currency' | 'metadata' | 'customer' | 'customer_email' | 'payment_intent' | 'invoice' | 'subscription' | 'livemode' | 'created'
> & { customer_details: { email: string | null } | null };

export function checkoutSession(s: Omit<Partial<Session>, 'metadata'> & { metadata: Metadata }): Session {
  const mode = s.mode ?? 'payment';
  return {
    id: id('cs_test'),
    object: 'checkout.session',
    mode,
    payment_status: 'paid',
    status: 'complete',
    amount_total: 5_000,
    amount_subtotal: 5_000,
    currency: 'usd',
    customer: id('cus'),
    customer_email: null,
    customer_details: { email: null },
    payment_intent: mode === 'payment' ? id('pi') : null,
    invoice: mode === 'subscription' ? id('in') : null,
    subscription: mode === 'subscription' ? id('sub') : null,
    livemode: true,
    created: now(),
    ...s,
    metadata: { ...s.metadata } as Stripe.Metadata,
  };
}

export interface InvoiceInput {
  id?: string;
  amount_paid?: number;
  currency?: string;
  billing_reason?: Stripe.Invoice.BillingReason;
  customer?: string;
  customer_email?: string | null;
  subscription?: string;
  metadata: Metadata;
  /** Legacy only: the payment intent and charge sat on the invoice. */
  payment_intent?: string;
  charge?: string;
}

/** What both layouts share. */
const invoiceBase = (i: InvoiceInput) => ({
  id: i.id ?? id('in'),
  object: 'invoice' as const,
  amount_paid: i.amount_paid ?? 5_000,
  currency: i.currency ?? 'usd',
  billing_reason: i.billing_reason ?? 'subscription_cycle',
  customer: i.customer ?? id('cus'),
  customer_email: i.customer_email ?? null,
  metadata: {},
});

/** An invoice in the newer layout: the subscription's metadata under parent.subscription_details. */
export function invoiceNewer(i: InvoiceInput) {
  const invoice: Pick<Stripe.Invoice, 'id' | 'object' | 'amount_paid' | 'currency' | 'billing_reason' | 'customer' | 'customer_email' | 'parent' | 'metadata'> = {
    ...invoiceBase(i),
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { metadata: { ...i.metadata } as Stripe.Metadata, subscription: i.subscription ?? id('sub') },
    },
  };
  return invoice;
}

/** The same invoice in the legacy layout: top-level subscription_details, subscription, payment_intent, charge. */
export function invoiceLegacy(i: InvoiceInput) {
  return {
    ...invoiceBase(i),
    subscription: i.subscription ?? id('sub'),
    subscription_details: { metadata: { ...i.metadata } },
    payment_intent: i.payment_intent ?? id('pi'),
    charge: i.charge ?? id('ch'),
  };
}

export function charge(c: { id?: string; payment_intent?: string | null; amount?: number; amount_refunded?: number; invoice?: string }) {
  const amount = c.amount ?? 5_000;
  const refunded = c.amount_refunded ?? amount;
  const object: Pick<Stripe.Charge, 'id' | 'object' | 'amount' | 'amount_refunded' | 'refunded' | 'payment_intent' | 'currency'> = {
    id: c.id ?? id('ch'),
    object: 'charge',
    amount,
    amount_refunded: refunded,
    refunded: refunded >= amount,
    payment_intent: c.payment_intent ?? null,
    currency: 'usd',
  };
  return c.invoice ? { ...object, invoice: c.invoice } : object;
}

export function dispute(d: { charge: string; payment_intent?: string | null }) {
  const object: Pick<Stripe.Dispute, 'id' | 'object' | 'amount' | 'charge' | 'payment_intent' | 'reason' | 'status' | 'currency'> = {
    id: id('du'),
    object: 'dispute',
    amount: 5_000,
    charge: d.charge,
    payment_intent: d.payment_intent ?? null,
    reason: 'fraudulent',
    status: 'needs_response',
    currency: 'usd',
  };
  return object;
}

export function account(a: { id: string; charges_enabled?: boolean; payouts_enabled?: boolean; details_submitted?: boolean }) {
  const object: Pick<Stripe.Account, 'id' | 'object' | 'charges_enabled' | 'payouts_enabled' | 'details_submitted'> = {
    object: 'account',
    charges_enabled: a.charges_enabled ?? true,
    payouts_enabled: a.payouts_enabled ?? true,
    details_submitted: a.details_submitted ?? true,
    id: a.id,
  };
  return object;
}

/** Signs the exact bytes sent, as the processor does. */
export function signed(payload: string, o: { secret?: string; timestamp?: number } = {}) {
  return Stripe.webhooks.generateTestHeaderString({ payload, secret: o.secret ?? PROCESSOR_SECRETS[0]!, timestamp: o.timestamp ?? now() });
}

/** `to`: the account's own URL (/api/v1/webhooks/processor/<to>), else the operator's. */
export function deliver(app: FastifyInstance, evt: object, o: { secret?: string; timestamp?: number; header?: string | null; to?: string } = {}) {
  const payload = JSON.stringify(evt);
  const header = o.header === undefined ? signed(payload, o) : o.header;
  return app.inject({
    method: 'POST',
    url: o.to ? `/api/v1/webhooks/processor/${o.to}` : '/api/v1/webhooks/processor',
    headers: { 'content-type': 'application/json; charset=utf-8', ...(header === null ? {} : { 'stripe-signature': header }) },
    payload,
  });
}

/** A processor account id of the expected shape (acct_ and letters or digits), new each call. */
export const accountId = () => `acct_${randomBytes(8).toString('hex')}`;
/** A webhook signing secret as the processor's dashboard shows one. */
export const webhookSecret = () => `whsec_${randomBytes(24).toString('base64url')}`;

/**
 * Connects the program to the account with that secret (the workspace owner's PUT) and, unless
 * `verify` is false, sends the account's first event to its own URL, which verifies the connection.
 */
export async function connectAccount(
  app: FastifyInstance,
  p: { programId: number; workspace: { ownerToken: string } },
  account: string,
  secret: string,
  o: { verify?: boolean } = {},
) {
  const put = await app.inject({
    method: 'PUT',
    url: `/api/tracking/programs/${p.programId}/processor-connection`,
    headers: { authorization: `Bearer ${p.workspace.ownerToken}` },
    payload: { account_id: account, webhook_secret: secret },
  });
  if (put.statusCode !== 200) throw new Error(`connect answered ${put.statusCode}: ${put.body}`);
  if (o.verify !== false) {
    // Any validly signed event verifies; an unhandled type changes nothing else.
    const first = await deliver(app, event('customer.created', { id: id('cus'), object: 'customer' }), { to: account, secret });
    if (first.statusCode !== 200) throw new Error(`the account's first event answered ${first.statusCode}: ${first.body}`);
  }
  return put.json().data as { processorConnectionStatus: string; webhookUrl: string | null };
}

/** The same delivery over HTTP to a service in another process: the status, or 0 when the connection failed (a killed process). */
export async function deliverHttp(base: string, evt: object): Promise<number> {
  const payload = JSON.stringify(evt);
  try {
    const res = await fetch(`${base}/api/v1/webhooks/processor`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signed(payload) },
      body: payload,
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * A processor sale of the click's customer (5,000 cents, charge ch), partly refunded: 1,000 cents,
 * then 2,000 in all. Emits sale.partially_refunded, commission.adjusted and platform_fee.adjusted.
 */
export async function partlyRefundedProcessorSale(app: FastifyInstance, programId: number, clickId: string) {
  const session = checkoutSession({ metadata: { program_id: String(programId), svc_click_id: clickId } });
  const pi = session.payment_intent as string;
  const chargeId = id('ch');
  for (const evt of [
    event('checkout.session.completed', session),
    event('charge.refunded', charge({ id: chargeId, payment_intent: pi, amount: 5_000, amount_refunded: 1_000 })),
    event('charge.refunded', charge({ id: chargeId, payment_intent: pi, amount: 5_000, amount_refunded: 2_000 })),
  ]) {
    const res = await deliver(app, evt);
    if (res.statusCode !== 200 || res.json().data.outcome !== 'recorded') throw new Error(`${evt.type} answered ${res.statusCode}: ${res.body}`);
  }
  return { transactionId: pi };
}
