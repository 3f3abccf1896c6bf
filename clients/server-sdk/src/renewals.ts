import type { TrackSaleOptions } from './types.js';

/**
 * The spec's self-hosted renewal rules: a processor `invoice.paid` event becomes one trackSale
 * call or a skip with its reason. Reads both the processor's newer layout (subscription details
 * under `invoice.parent`, API version 2025-03-31 and later) and the legacy top-level one.
 */

export type RenewalSkipReason =
  /** An event of another type was given. */
  | 'not_invoice_paid'
  /** Not a renewal: the first invoice of a subscription, a manual invoice, an update... */
  | 'not_subscription_cycle'
  /** Nothing was paid (a trial, a 100% coupon, paid from credit); the SDK refuses amounts <= 0. */
  | 'nothing_paid'
  | 'missing_invoice_id'
  /** The subscription carries no `svc_customer_key` metadata: the renewal cannot be attributed. */
  | 'missing_customer_key';

export type RenewalDecision =
  | { track: true; sale: TrackSaleOptions }
  | { track: false; reason: RenewalSkipReason; message: string };

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const child = (value: unknown, key: string): Json | undefined => {
  const found = isObject(value) ? value[key] : undefined;
  return isObject(found) ? found : undefined;
};
const nonEmpty = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
/** A subscription is an id, or the expanded object carrying one. */
const idOf = (value: unknown): string | undefined => nonEmpty(value) ?? (isObject(value) ? nonEmpty(value.id) : undefined);

const skip = (reason: RenewalSkipReason, message: string): RenewalDecision => ({ track: false, reason, message });

/**
 * Accepts the webhook event (`{ type: 'invoice.paid', data: { object: invoice } }`) or the
 * invoice itself, as the processor's libraries hand over either.
 */
export function renewalSale(eventOrInvoice: unknown): RenewalDecision {
  let invoice: unknown = eventOrInvoice;
  if (isObject(eventOrInvoice) && typeof eventOrInvoice.type === 'string') {
    if (eventOrInvoice.type !== 'invoice.paid') return skip('not_invoice_paid', `event type is ${eventOrInvoice.type}, not invoice.paid`);
    invoice = child(child(eventOrInvoice, 'data'), 'object');
  }
  if (!isObject(invoice)) return skip('not_invoice_paid', 'no invoice object was given');
  if (invoice.billing_reason !== 'subscription_cycle') {
    return skip('not_subscription_cycle', `billing_reason is ${String(invoice.billing_reason)}, not subscription_cycle`);
  }
  const amount = invoice.amount_paid;
  if (typeof amount !== 'number' || !(amount > 0)) return skip('nothing_paid', `amount_paid is ${String(amount)}`);
  const invoiceId = nonEmpty(invoice.id);
  if (!invoiceId) return skip('missing_invoice_id', 'the invoice has no id');

  // Newer layout first, then the legacy top-level fields.
  const current = child(child(invoice, 'parent'), 'subscription_details');
  const legacy = child(invoice, 'subscription_details');
  const customerKey = nonEmpty(child(current, 'metadata')?.svc_customer_key) ?? nonEmpty(child(legacy, 'metadata')?.svc_customer_key);
  const subscriptionId = idOf(current?.subscription) ?? idOf(invoice.subscription);
  if (!customerKey) {
    return skip('missing_customer_key', 'no svc_customer_key in the subscription metadata (set it in subscription_data.metadata at checkout)');
  }
  const sale: TrackSaleOptions = { customerExternalId: customerKey, amount, invoiceId, isRecurring: true, saleType: 'subscription' };
  const currency = nonEmpty(invoice.currency);
  if (currency) sale.currency = currency;
  if (subscriptionId) sale.subscriptionId = subscriptionId;
  return { track: true, sale };
}
