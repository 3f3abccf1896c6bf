import { z } from 'zod';
import { CURRENCIES, type Currency } from './providers.js';

/**
 * The parts of the processor's (Stripe-compatible) events and objects this service reads, in both
 * API layouts: the newer one (2025-03-31 and later: subscription details under `invoice.parent`)
 * and the legacy one (top-level `subscription_details`, `subscription`, `payment_intent`, `charge`).
 * Every other field is ignored.
 */

/** An expandable reference: the id, or the expanded object carrying it. */
const ref = z.union([z.string(), z.object({ id: z.string() }).transform((o) => o.id)]).nullish();
const metadata = z.record(z.string(), z.string().nullish()).nullish();

/**
 * `created`, unix seconds: from 2000-01-01 to 2100-01-01, a range every date type on the way
 * (Postgres timestamptz, JS Date, the warehouse's DateTime64) holds, and no processor event falls outside.
 */
const CREATED_RANGE = { min: Date.UTC(2000, 0, 1) / 1000, max: Date.UTC(2100, 0, 1) / 1000 } as const;
const UNSTORABLE = 'unstorable_text';

/** NUL and unpaired surrogates cannot be stored in Postgres text or jsonb (nor kept apart once converted). */
const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

/** Every string of a parsed JSON value, keys included, is storable. */
function storableDeep(value: unknown): boolean {
  if (typeof value === 'string') return storable(value);
  if (Array.isArray(value)) return value.every(storableDeep);
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([k, v]) => storable(k) && storableDeep(v));
  return true;
}

export const ProcessorEvent = z
  .object({
    id: z.string().min(1).max(255),
    type: z.string().min(1).max(255),
    created: z.number().int().min(CREATED_RANGE.min).max(CREATED_RANGE.max),
    livemode: z.boolean(),
    account: z.string().min(1).max(255).nullish(),
    data: z.object({ object: z.record(z.string(), z.unknown()) }),
  })
  // The whole event, not only the fields read: a waiting refund is kept whole (its payload), and
  // one bad string in a batch's JSON would fail the statement of every event sent with it.
  .refine(storableDeep, { message: UNSTORABLE });
export type ProcessorEvent = z.infer<typeof ProcessorEvent>;

/** Why a body is not an event this service can take: its created time (a number out of range), its text, or its shape. */
export function eventProblem(error: z.ZodError, body: unknown): 'created' | 'text' | 'shape' {
  const created = (body as { created?: unknown } | null)?.created;
  if (typeof created === 'number' && error.issues.some((i) => i.path[0] === 'created')) return 'created';
  if (error.issues.some((i) => i.message === UNSTORABLE)) return 'text';
  return 'shape';
}

/**
 * A promotion code as the processor names it: its id (`promo_...`), or the expanded object with its
 * id and customer-facing `code`. Issue 31, point 4 (docs/decisions/links-and-promo-codes.md).
 */
const promotionCode = z
  .union([z.string(), z.object({ id: z.string().nullish(), code: z.string().nullish() })])
  .nullish()
  .catch(null);
/**
 * A discount: a checkout session's `discounts[]` entry ({ coupon, promotion_code }), or a Discount
 * object (`invoice.discount` in the legacy layout, an expanded `invoice.discounts[]` entry, a
 * session's `total_details.breakdown.discounts[].discount`). An unexpanded discount id (`di_...`,
 * the newer invoice layout's `discounts[]` as sent) names no code: it reads as nothing.
 */
const discount = z.union([z.string(), z.object({ promotion_code: promotionCode })]).nullish().catch(null);
const discounts = z.array(discount).nullish().catch(null);

/** The promotion ids and customer-facing codes of a payment's discounts, each once. */
export interface Promotions {
  promotionIds: string[];
  promoCodes: string[];
}

function promotionsOf(found: (z.infer<typeof discount> | undefined)[]): Promotions {
  const ids = new Set<string>();
  const codes = new Set<string>();
  for (const d of found) {
    if (!d || typeof d === 'string') continue;
    const pc = d.promotion_code;
    if (typeof pc === 'string') {
      if (pc.trim() !== '') ids.add(pc.trim());
    } else if (pc) {
      if (pc.id && pc.id.trim() !== '') ids.add(pc.id.trim());
      if (pc.code && pc.code.trim() !== '') codes.add(pc.code.trim());
    }
  }
  return { promotionIds: [...ids].slice(0, 20), promoCodes: [...codes].slice(0, 20) };
}

const CheckoutSession = z.object({
  id: z.string(),
  mode: z.string().nullish(),
  payment_status: z.string().nullish(),
  amount_total: z.number().int().nullish(),
  currency: z.string().nullish(),
  metadata,
  customer: ref,
  customer_email: z.string().nullish(),
  customer_details: z.object({ email: z.string().nullish() }).nullish(),
  payment_intent: ref,
  invoice: ref,
  subscription: ref,
  discounts,
  total_details: z.object({ breakdown: z.object({ discounts: z.array(z.object({ discount }).catch({ discount: null })).nullish() }).nullish() }).nullish().catch(null),
});

const SubscriptionDetails = z.object({ metadata, subscription: ref }).nullish();

const Invoice = z.object({
  id: z.string(),
  amount_paid: z.number().int().nullish(),
  currency: z.string().nullish(),
  billing_reason: z.string().nullish(),
  customer: ref,
  customer_email: z.string().nullish(),
  metadata,
  // newer layout
  parent: z.object({ subscription_details: SubscriptionDetails }).nullish(),
  // legacy layout
  subscription_details: SubscriptionDetails,
  subscription: ref,
  payment_intent: ref,
  charge: ref,
  // legacy layout: one Discount object; both layouts: discounts[] (ids unless expanded)
  discount,
  discounts,
});

/** invoice_payment.paid (newer layout): which payment intent or charge paid which invoice. */
const InvoicePayment = z.object({
  invoice: ref,
  payment: z.object({ payment_intent: ref, charge: ref }).nullish(),
});

const Charge = z.object({
  id: z.string(),
  amount: z.number().int(),
  amount_refunded: z.number().int().nullish(),
  refunded: z.boolean().nullish(),
  payment_intent: ref,
  invoice: ref, // legacy layout only
});

const Dispute = z.object({ id: z.string(), charge: ref, payment_intent: ref, reason: z.string().nullish() });

const Account = z.object({
  id: z.string(),
  charges_enabled: z.boolean().nullish(),
  payouts_enabled: z.boolean().nullish(),
  details_submitted: z.boolean().nullish(),
});

/** The metadata keys of the spec ("Events"). */
export interface PaymentMetadata {
  clickId: string | undefined;
  customerKey: string | undefined;
  programId: string | undefined;
}

/** A paid payment, as a sale would record it; or why it records none. */
export type PaymentReading =
  | {
      kind: 'payment';
      transactionId: string;
      amountCents: number;
      currency: Currency;
      metadata: PaymentMetadata;
      email: string | undefined;
      processorCustomerId: string | undefined;
      /** The processor ids a later refund or dispute may name (payment intent, charge, invoice, session). */
      refs: string[];
      isRecurring: boolean;
      saleType: string;
      subscriptionId: string | undefined;
      providerPaymentId: string | undefined;
      /** Promo codes and processor promotion ids of its discounts: they attribute a customer with no attribution yet. */
      promotions: Promotions;
    }
  | { kind: 'skip'; reason: string; programId?: string | undefined; refs?: string[] };

const text = (v: string | null | undefined) => (v === null || v === undefined || v.trim() === '' ? undefined : v.trim());
const readMetadata = (m: Record<string, string | null | undefined>): PaymentMetadata => ({
  clickId: text(m.svc_click_id),
  customerKey: text(m.svc_customer_key),
  programId: text(m.program_id),
});
const defined = (values: (string | null | undefined)[]) => values.filter((v): v is string => typeof v === 'string' && v !== '');

function currencyOf(code: string | null | undefined): Currency | undefined {
  const upper = code?.toUpperCase();
  return (CURRENCIES as readonly string[]).includes(upper ?? '') ? (upper as Currency) : undefined;
}

/** checkout.session.completed and checkout.session.async_payment_succeeded. */
export function readCheckoutSession(object: unknown): PaymentReading {
  const parsed = CheckoutSession.safeParse(object);
  if (!parsed.success) return { kind: 'skip', reason: 'unreadable_object' };
  const s = parsed.data;
  const md = readMetadata(s.metadata ?? {});
  // The first invoice of a subscription and its session are one payment: both use the invoice id.
  const transactionId = s.mode === 'subscription' ? (s.invoice ?? s.id) : (s.payment_intent ?? s.id);
  const refs = defined([s.payment_intent, s.invoice, s.id]);
  const skip = (reason: string): PaymentReading => ({ kind: 'skip', reason, programId: md.programId, refs });
  if (s.mode === 'setup') return skip('no_payment');
  if (s.payment_status === 'unpaid') return skip('payment_pending');
  if ((s.amount_total ?? 0) <= 0 || s.payment_status === 'no_payment_required') return skip('zero_total');
  const currency = currencyOf(s.currency);
  if (!currency) return skip('unsupported_currency');
  return {
    kind: 'payment',
    transactionId,
    amountCents: s.amount_total!,
    currency,
    metadata: md,
    email: text(s.customer_details?.email) ?? text(s.customer_email),
    processorCustomerId: s.customer ?? undefined,
    refs,
    isRecurring: false,
    saleType: s.mode === 'subscription' ? 'subscription' : 'one_time',
    subscriptionId: s.subscription ?? undefined,
    providerPaymentId: s.payment_intent ?? s.invoice ?? s.id,
    promotions: promotionsOf([...(s.discounts ?? []), ...(s.total_details?.breakdown?.discounts ?? []).map((b) => b.discount)]),
  };
}

/** invoice.payment_succeeded: the subscription's metadata from the newer location first, then the legacy one. */
export function readInvoice(object: unknown): PaymentReading {
  const parsed = Invoice.safeParse(object);
  if (!parsed.success) return { kind: 'skip', reason: 'unreadable_object' };
  const inv = parsed.data;
  const newer = inv.parent?.subscription_details;
  const legacy = inv.subscription_details;
  const md = { ...readMetadata(inv.metadata ?? {}) };
  for (const source of [legacy?.metadata, newer?.metadata]) {
    const m = readMetadata(source ?? {});
    md.clickId = m.clickId ?? md.clickId;
    md.customerKey = m.customerKey ?? md.customerKey;
    md.programId = m.programId ?? md.programId;
  }
  const subscriptionId = newer?.subscription ?? legacy?.subscription ?? inv.subscription ?? undefined;
  const refs = defined([inv.id, inv.payment_intent, inv.charge]);
  const skip = (reason: string): PaymentReading => ({ kind: 'skip', reason, programId: md.programId, refs });
  if ((inv.amount_paid ?? 0) <= 0) return skip('zero_total');
  const currency = currencyOf(inv.currency);
  if (!currency) return skip('unsupported_currency');
  return {
    kind: 'payment',
    transactionId: inv.id,
    amountCents: inv.amount_paid!,
    currency,
    metadata: md,
    email: text(inv.customer_email),
    processorCustomerId: inv.customer ?? undefined,
    refs,
    isRecurring: inv.billing_reason === 'subscription_cycle',
    saleType: subscriptionId ? 'subscription' : 'one_time',
    subscriptionId,
    providerPaymentId: inv.payment_intent ?? inv.id,
    promotions: promotionsOf([inv.discount, ...(inv.discounts ?? [])]),
  };
}

/** invoice_payment.paid: the invoice and the payment ids that paid it, or undefined. */
export function readInvoicePayment(object: unknown): { invoiceId: string; refs: string[] } | undefined {
  const parsed = InvoicePayment.safeParse(object);
  if (!parsed.success || !parsed.data.invoice) return undefined;
  return { invoiceId: parsed.data.invoice, refs: defined([parsed.data.payment?.payment_intent, parsed.data.payment?.charge]) };
}

/** A refund (charge.refunded) or a dispute (charge.dispute.created) of a payment. */
export type ReversalReading =
  | { kind: 'reversal'; reason: 'refund' | 'chargeback'; refs: string[]; full: boolean; refundedCents: number; amountCents: number; note: string | undefined }
  | { kind: 'skip'; reason: string };

export function readCharge(object: unknown): ReversalReading {
  const parsed = Charge.safeParse(object);
  if (!parsed.success) return { kind: 'skip', reason: 'unreadable_object' };
  const c = parsed.data;
  const refundedCents = c.amount_refunded ?? 0;
  return {
    kind: 'reversal',
    reason: 'refund',
    refs: defined([c.id, c.payment_intent, c.invoice]),
    full: c.refunded === true || refundedCents >= c.amount,
    refundedCents,
    amountCents: c.amount,
    note: undefined,
  };
}

export function readDispute(object: unknown): ReversalReading {
  const parsed = Dispute.safeParse(object);
  if (!parsed.success) return { kind: 'skip', reason: 'unreadable_object' };
  const d = parsed.data;
  return { kind: 'reversal', reason: 'chargeback', refs: defined([d.charge, d.payment_intent]), full: true, refundedCents: 0, amountCents: 0, note: text(d.reason) };
}

export function readAccount(object: unknown) {
  const parsed = Account.safeParse(object);
  if (!parsed.success) return undefined;
  const a = parsed.data;
  return { accountId: a.id, chargesEnabled: a.charges_enabled ?? false, payoutsEnabled: a.payouts_enabled ?? false, detailsSubmitted: a.details_submitted ?? false };
}
