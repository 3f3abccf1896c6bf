// The server SDK's public types: what it is constructed with, the options of each call (the
// spec's "Server SDK (beta) call shapes", word for word), and the result every call resolves to.
// The calls themselves are not written yet (issue 11); nothing here sends a request.

/** What the SDK is constructed with. The program API key stays on the brand's server. */
export interface ServerSdkOptions {
  /** The program API key (`aff_...`), sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Where the service answers, for example `https://track.example.com`; paths are appended. */
  baseUrl: string;
  /** The fetch to use; the global fetch of Node 18+ when omitted. */
  fetch?: typeof fetch;
}

/** `additional_data` of a lead. */
export interface LeadAdditionalData {
  test_mode?: boolean;
  program_id?: number;
}

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
  /** Integer minor units (cents), positive. */
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
}

/** The service's `error` object: clients read `code` first and fall back to `message`. */
export interface ServiceError {
  code?: string;
  message: string;
  /** Set on a 429 (`rate_limited`) and on a readiness 500. */
  retry_after_seconds?: number;
  details?: Record<string, unknown>;
}

/** An entry of the top-level `warnings` array of a key marked for rotation. */
export interface RotationWarning {
  code: 'api_key_rotation_required';
  message: string;
  hint: string;
  rotate_by: string;
  docs_url: string;
}

interface ResultBase {
  /** The HTTP status; 0 when no answer arrived (network error, timeout). */
  status: number;
  /** The `X-Request-ID` of the answer, when there was one. */
  requestId: string | null;
  warnings: RotationWarning[];
}

/**
 * What every call resolves to; a call never throws on an API failure or a network error. A
 * 409 on a sale (already recorded under this `invoiceId`) is a failure whose caller may treat
 * it as success, as the spec says.
 */
export type SvcResult<Data> =
  | (ResultBase & { ok: true; data: Data; error: null })
  | (ResultBase & { ok: false; data: null; error: ServiceError });
