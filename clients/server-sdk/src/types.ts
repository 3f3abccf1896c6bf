// The server SDK's public types: what it is constructed with, the options of each call (the
// spec's "Server SDK (beta) call shapes", word for word), and the result every call resolves to.
// What travels on the wire (the bodies sent, the `data` answered, the error envelopes) is in
// wire.ts, generated from the service's schemas: never written here.
import type { LeadRequest, PlatformError, RotationWarning, SaleData, TypedError } from './wire.js';

export type { LeadData, RefundData, RotationWarning, SaleData } from './wire.js';

/** How a call is retried. Every bound applies; the first one reached ends the call. */
export interface RetryOptions {
  /**
   * The whole call, every attempt and every wait included, ends within this many milliseconds
   * (default 30,000). A wait the service asks for that does not fit is not started: the call
   * resolves to the answer that asked for it.
   */
  budgetMs?: number;
  /** Attempts per call, the first included (default 4). 1 turns retries off. */
  maxAttempts?: number;
  /** The first backoff; each later one doubles, with full jitter (default 500). */
  baseDelayMs?: number;
  /** No backoff is longer than this, unless the service asks for longer (default 8,000). */
  maxDelayMs?: number;
}

/** Told before each wait, for logging; what it returns or throws changes nothing. */
export interface RetryNotice {
  call: 'trackLead' | 'trackSale' | 'trackRefund';
  /** The attempt that failed, from 1. */
  attempt: number;
  /** Its status; 0 when no answer arrived. */
  status: number;
  error: ServiceError;
  /** How long the SDK waits before the next attempt. */
  delayMs: number;
}

/** What the SDK is constructed with. The program API key stays on the brand's server. */
export interface ServerSdkOptions {
  /** The program API key (`aff_...`), sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Where the service answers, for example `https://track.example.com`; paths are appended. */
  baseUrl: string;
  /** The fetch to use; the global fetch of Node 18+ when omitted. */
  fetch?: typeof fetch;
  /** One attempt is abandoned after this many milliseconds (default 10,000). */
  timeoutMs?: number;
  /** Retry bounds, or `false` for a single attempt per call. */
  retry?: RetryOptions | false;
  onRetry?: (notice: RetryNotice) => void;
}

/** `additional_data` of a lead, sent as given. */
export type LeadAdditionalData = NonNullable<LeadRequest['additional_data']>;

export interface TrackLeadOptions {
  /** The brand's stable user id (`customer_key` in the REST API); the same at signup and at sale. */
  customerExternalId: string;
  /** The click id forwarded from the browser's `svc_click_id` cookie, when there is one. */
  clickId?: string | null;
  email?: string;
  additionalData?: LeadAdditionalData;
}

export interface TrackSaleOptions {
  customerExternalId: string;
  /** Integer minor units (cents), positive. Anything else is refused before a request is sent. */
  amount: number;
  /** The idempotency key (`transaction_id`): a duplicate answers status 409. */
  invoiceId: string;
  /** `usd` when omitted; the service accepts `USD`, `EUR` and `VND` in any letter case. */
  currency?: string;
  isRecurring?: boolean;
  /** For example `subscription`. */
  saleType?: string;
  subscriptionId?: string;
}

export interface TrackRefundOptions {
  /** The `invoiceId` of the original sale. */
  invoiceId: string;
  /** `refund` when omitted. */
  reason?: 'refund' | 'chargeback';
  /** Free text kept with the refund. */
  refundReason?: string;
}

/** The `error` object of either envelope the service answers with. */
type WireError = (PlatformError | TypedError)['error'];

/**
 * The service's `error` object: clients read `code` first and fall back to `message`. When no
 * answer arrived the SDK writes one itself, with status 0 and the code `network_error` or
 * `timeout`, or `invalid_amount` / `invalid_request` for a call it refused before sending. A 2xx
 * without a `data` object (a proxy's page) gets `invalid_response`.
 */
export interface ServiceError {
  code?: WireError['code'];
  message: WireError['message'];
  /** Set on a 429 (`rate_limited`) and on a readiness 500. */
  retry_after_seconds?: number;
  details?: PlatformError['error']['details'];
}

interface ResultBase {
  /** The HTTP status of the last attempt; 0 when no answer arrived (network error, timeout, refused before sending). */
  status: number;
  /** The `X-Request-ID` of the last answer, when there was one. */
  requestId: string | null;
  warnings: RotationWarning[];
  /** Requests sent: 0 when the SDK refused the call itself, more than 1 after retries. */
  attempts: number;
}

/**
 * What every call resolves to; a call never throws on an API failure or a network error.
 */
export type SvcResult<Data> =
  | (ResultBase & { ok: true; data: Data; error: null })
  | (ResultBase & { ok: false; data: null; error: ServiceError });

/** `data` of a sale answered 409 for this program's own sale: it was recorded before under this `invoiceId`. */
export interface AlreadyRecordedSale {
  sale_id: string;
  transaction_id: string;
  already_recorded: true;
}

/**
 * What trackSale resolves to. A 409 naming this program's own sale (a retry or a redelivery whose
 * first attempt got through) is a success with `alreadyRecorded: true`. A 409 without it means the
 * `invoiceId` belongs to another program's sale: this sale was NOT recorded, `ok` is false and
 * `error.code` is `transaction_id_collision`.
 */
export type SaleResult =
  | (ResultBase & { ok: true; alreadyRecorded: false; data: SaleData; error: null })
  | (ResultBase & { ok: true; alreadyRecorded: true; data: AlreadyRecordedSale; error: null })
  | (ResultBase & { ok: false; alreadyRecorded: false; data: null; error: ServiceError });
