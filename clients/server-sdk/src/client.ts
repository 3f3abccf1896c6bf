import { renewalSale, type RenewalSkipReason } from './renewals.js';
import { DEFAULT_RETRY, DEFAULT_TIMEOUT_MS, refusedBeforeSending, send, type Transport } from './transport.js';
import type {
  LeadData,
  RetryOptions,
  RefundData,
  SaleData,
  SaleResult,
  ServerSdkOptions,
  SvcResult,
  TrackLeadOptions,
  TrackRefundOptions,
  TrackSaleOptions,
} from './types.js';
import type { LeadRequest, RefundRequest, SaleRequest } from './wire.js';

/** The defaults, with each bound the caller set to a usable number. */
function retryBounds(given: RetryOptions | undefined): Required<RetryOptions> {
  const bounds = { ...DEFAULT_RETRY };
  for (const name of Object.keys(bounds) as (keyof RetryOptions)[]) {
    const value = given?.[name];
    if (typeof value === 'number' && value >= 0 && Number.isFinite(value)) bounds[name] = value;
  }
  bounds.maxAttempts = Math.max(1, Math.floor(bounds.maxAttempts));
  return bounds;
}

/** What trackRenewal resolves to: the sale's result, or why no sale was sent. */
export type RenewalResult =
  | (SaleResult & { skipped: false })
  | { skipped: true; reason: RenewalSkipReason; message: string };

/**
 * Tells the two kinds of 409 apart. The service names the sale in `error.details.sale_id` only when
 * it belongs to the key's own program; without it another program holds the transaction_id, and a
 * caller that took every 409 for "already recorded" would lose this sale without a word.
 */
function saleResult(result: SvcResult<SaleData>, invoiceId: string): SaleResult {
  if (result.ok || result.status !== 409) return { ...result, alreadyRecorded: false };
  const saleId = result.error.details?.sale_id;
  if (typeof saleId === 'string' && saleId !== '') {
    return { ...result, ok: true, alreadyRecorded: true, data: { sale_id: saleId, transaction_id: invoiceId, already_recorded: true }, error: null };
  }
  const error = {
    ...result.error,
    code: 'transaction_id_collision',
    message:
      `invoiceId ${JSON.stringify(invoiceId)} is already the transaction_id of another program's sale: this sale was NOT recorded. ` +
      "Use your payment processor's ids (pi_..., in_..., ch_...) as invoiceId; readiness lists the collision under transaction_id_collisions.",
  };
  return { ...result, alreadyRecorded: false, error };
}

/**
 * The server SDK. Constructed once with the program API key; every call resolves to a result
 * and never throws. Options that cannot work (no key, no absolute base URL) throw at construction,
 * so a misconfigured server fails at start-up rather than on a customer's purchase.
 */
export class Svc {
  readonly #transport: Transport;

  constructor(options: ServerSdkOptions) {
    if (typeof options?.apiKey !== 'string' || options.apiKey.trim() === '') {
      throw new TypeError('Svc: apiKey is required (the program API key, aff_...)');
    }
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`Svc: baseUrl must be an absolute URL, for example https://track.example.com (got ${String(options.baseUrl)})`);
    }
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('Svc: no global fetch (Node 18 or later is needed), and no fetch option given');
    this.#transport = {
      apiKey: options.apiKey.trim(),
      baseUrl: base.toString().replace(/\/+$/, ''),
      fetch: fetchImpl,
      timeoutMs: typeof options.timeoutMs === 'number' && options.timeoutMs > 0 ? options.timeoutMs : DEFAULT_TIMEOUT_MS,
      retry: options.retry === false ? { ...DEFAULT_RETRY, maxAttempts: 1 } : retryBounds(options.retry),
      onRetry: options.onRetry,
    };
  }

  /** A server-mode lead (signup) for a customer of this key's program. */
  trackLead(options: TrackLeadOptions): Promise<SvcResult<LeadData>> {
    options ??= {} as TrackLeadOptions;
    return send<LeadData, LeadRequest>(this.#transport, 'trackLead', '/api/v1/track/lead', {
      customer_key: options.customerExternalId,
      click_id: options.clickId ?? undefined,
      email: options.email,
      additional_data: options.additionalData,
    });
  }

  /** A sale. A non-positive or non-integer amount is refused here, before any request. */
  async trackSale(options: TrackSaleOptions): Promise<SaleResult> {
    options ??= {} as TrackSaleOptions;
    const { amount } = options;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) {
      const refused = refusedBeforeSending<SaleData>(
        'invalid_amount',
        `amount must be a positive integer number of cents; got ${typeof amount === 'number' ? amount : typeof amount}. No request was sent.`,
      );
      return { ...refused, alreadyRecorded: false };
    }
    const result = await send<SaleData, SaleRequest>(this.#transport, 'trackSale', '/api/v1/track/sale', {
      transaction_id: options.invoiceId,
      amount_cents: amount,
      customer_key: options.customerExternalId,
      currency: options.currency ?? 'usd',
      is_recurring: options.isRecurring,
      sale_type: options.saleType,
      subscription_id: options.subscriptionId,
    });
    return saleResult(result, options.invoiceId);
  }

  /** A full refund (or chargeback) of the sale recorded under invoiceId. */
  trackRefund(options: TrackRefundOptions): Promise<SvcResult<RefundData>> {
    options ??= {} as TrackRefundOptions;
    return send<RefundData, RefundRequest>(this.#transport, 'trackRefund', '/api/v1/track/refund', {
      transaction_id: options.invoiceId,
      reason: options.reason,
      refund_reason: options.refundReason,
    });
  }

  /**
   * A processor `invoice.paid` event (or its invoice) under the spec's self-hosted renewal rules:
   * a trackSale call, or a skip with its reason. Do not use it when the processor connection
   * records sales itself, or the renewal is counted twice.
   */
  async trackRenewal(eventOrInvoice: unknown): Promise<RenewalResult> {
    const decision = renewalSale(eventOrInvoice);
    if (!decision.track) return { skipped: true, reason: decision.reason, message: decision.message };
    return { ...(await this.trackSale(decision.sale)), skipped: false };
  }
}
