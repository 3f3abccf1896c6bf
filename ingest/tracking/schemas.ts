import { z } from 'zod';
import { SUB_ID_MAX } from '../../domain/partners/links.js';
import { CURRENCIES, PROVIDERS, type Currency } from '../../domain/payments/providers.js';
import { M } from '../http/messages.js';
import { PlatformError, TypedError, additionalData, body, echo, flag, storable, text } from '../http/schemas.js';

/**
 * The tracking surface's contract: every request and response body of /api/v1/track/* and of the
 * program's readiness, defined once. The routes validate and serialize with these, @fastify/swagger
 * documents them, and `npm run build:client-types` (scripts/client-types.ts) turns them into the
 * clients' wire types, so a field changed here changes the SDKs' types with it.
 */

/** The error envelopes the tracking routes answer with (ingest/http/errors.ts renders them). */
export { PlatformError, TypedError };

const MAX_AMOUNT_CENTS = 1_000_000_000_000;
const OCCURRED_AT_PAST_MS = 30 * 86_400_000;
const OCCURRED_AT_FUTURE_MS = 5 * 60_000;
const ISO_WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** A real instant with an explicit offset, within the last 30 days and at most 5 minutes ahead. */
export function parseOccurredAt(value: string, now = Date.now()): Date | undefined {
  const m = ISO_WITH_OFFSET.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  // Date.parse rolls 2026-02-30 over to March; a calendar date that does not exist is refused.
  const calendar = new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, s ?? 0));
  if (calendar.getUTCMonth() !== mo! - 1 || calendar.getUTCDate() !== d! || h! > 23 || mi! > 59 || (s ?? 0) > 59) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at) || at < now - OCCURRED_AT_PAST_MS || at > now + OCCURRED_AT_FUTURE_MS) return undefined;
  return new Date(at);
}

/**
 * Beside `data` (or the click's fields) while the program key is marked for rotation: added on
 * send, after serialization, by ingest/http/auth/program-key.ts; described here so clients get it.
 */
export const RotationWarning = z.object({
  code: z.literal(M.rotation.code),
  message: z.string(),
  hint: z.string(),
  rotate_by: z.string(),
  docs_url: z.string(),
});
const warnings = z.array(RotationWarning).optional().describe('Present while the API key is marked for rotation');

const customerRef = (name: string) => text(255, M.body.identifier(name)).optional();

/**
 * sub1..sub5 of a click's URL, decoded; absent, empty or unstorable ones are null. One longer than
 * SUB_ID_MAX is cut to 100 characters (docs/decisions/links-and-promo-codes.md: the tracking contract records the
 * click of any URL with an aff, so a sub-id never refuses it), without splitting a surrogate pair.
 */
export function subIdsOf(params: URLSearchParams): readonly [string | null, string | null, string | null, string | null, string | null] {
  const one = (name: string) => {
    let v = params.get(name);
    if (v === null || v === '') return null;
    if (v.length > SUB_ID_MAX) v = v.slice(0, /[\uD800-\uDBFF]/.test(v[SUB_ID_MAX - 1]!) ? SUB_ID_MAX - 1 : SUB_ID_MAX);
    return storable(v) ? v : null;
  };
  return [one('sub1'), one('sub2'), one('sub3'), one('sub4'), one('sub5')];
}

export const ClickRequest = body({
  affiliate_url: z
    .string({ error: (issue) => (issue.input === undefined ? M.click.urlRequired : M.click.urlInvalid) })
    .max(2048, M.click.urlInvalid)
    .refine(storable, M.click.urlInvalid)
    .transform((value, ctx) => {
      if (value.trim() === '') {
        ctx.addIssue({ code: 'custom', message: M.click.urlRequired });
        return z.NEVER;
      }
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        ctx.addIssue({ code: 'custom', message: M.click.urlInvalid });
        return z.NEVER;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        ctx.addIssue({ code: 'custom', message: M.click.urlInvalid });
        return z.NEVER;
      }
      const aff = url.searchParams.get('aff')?.trim();
      if (!aff) {
        ctx.addIssue({ code: 'custom', message: M.click.noAff });
        return z.NEVER;
      }
      // Decoded from the query string, so %00 and the like only show here; no link has such a code.
      if (aff.length > 255 || !storable(aff)) {
        ctx.addIssue({ code: 'custom', message: M.click.linkNotFound });
        return z.NEVER;
      }
      return { url: value, aff, subs: subIdsOf(url.searchParams) };
    })
    .describe('Absolute http(s) URL of the landing page, carrying the aff query parameter'),
  additional_data: additionalData,
});

/** The click's 200: written by a hand-made serializer (ingest/tracking/click.ts); this documents it. */
export const ClickResponse = z.object({ success: z.literal(true), click_id: z.string(), cookie_window_days: z.number().int(), warnings });

export const LeadRequest = body({
  click_id: customerRef('click_id'),
  customer_key: customerRef('customer_key'),
  email: text(320, M.lead.email).optional(),
  additional_data: additionalData,
});

export const LeadData = z.object({
  customer_id: z.number().int(),
  program_id: z.number().int(),
  click_id: z.string().nullable(),
  status: z.enum(['lead', 'conversion']),
  signup_date: z.string().nullable(),
  provisional: z.literal(true).optional(),
});
export const LeadResponse = z.object({ data: LeadData, warnings });

/**
 * The sale's additional_data: the tracking contract's fields and, issue 31, `promo_code`: a
 * partner's promo code (any letter case) that attributes a customer with no attribution yet.
 */
const saleAdditionalData = z
  .object({ ...additionalData.unwrap().shape, promo_code: text(64, M.sale.promoCode).optional() }, { error: M.body.additionalData })
  .optional();

export const SaleRequest = body({
  transaction_id: text(255, M.sale.transactionId).optional().describe('Idempotency key; optional in test mode only'),
  amount_cents: z
    .number({ error: M.sale.amount })
    .int(M.sale.amount)
    .positive(M.sale.amount)
    .max(MAX_AMOUNT_CENTS, M.sale.amountAtMost(MAX_AMOUNT_CENTS))
    .optional()
    .describe('Positive integer in the smallest currency unit; optional in test mode only'),
  customer_key: customerRef('customer_key'),
  click_id: customerRef('click_id'),
  currency: z
    .unknown()
    .transform((value, ctx): Currency => {
      const code = typeof value === 'string' ? value.toUpperCase() : undefined;
      if (code !== undefined && (CURRENCIES as readonly string[]).includes(code)) return code as Currency;
      ctx.addIssue({ code: 'custom', message: M.sale.currency(echo(value)), params: { status: 422 } });
      return z.NEVER;
    })
    .optional()
    .describe('USD, EUR or VND, in any letter case; default USD'),
  occurred_at: z
    .string({ error: M.sale.occurredAt })
    .transform((value, ctx) => {
      const at = parseOccurredAt(value);
      if (!at) ctx.addIssue({ code: 'custom', message: M.sale.occurredAt });
      return at ?? z.NEVER;
    })
    .optional()
    .describe('ISO 8601 with offset, within the last 30 days, at most 5 minutes ahead'),
  provider: z.enum(PROVIDERS, { error: M.sale.provider }).optional(),
  provider_payment_id: text(255, M.sale.providerPaymentId).optional(),
  livemode: flag(M.sale.livemode).optional(),
  is_recurring: flag(M.sale.isRecurring).optional(),
  sale_type: text(64, M.sale.saleType).optional(),
  subscription_id: text(255, M.sale.subscriptionId).optional(),
  additional_data: saleAdditionalData,
});

export const SaleData = z.object({
  sale_id: z.string(),
  transaction_id: z.string(),
  program_id: z.number().int(),
  customer_id: z.number().int().nullable(),
  amount_cents: z.number().int(),
  currency: z.enum(CURRENCIES),
  occurred_at: z.string(),
  status: z.literal('paid'),
  conversion: z.boolean(),
  test_mode: z.boolean(),
  commission: z
    .object({ commission_id: z.string(), partner_id: z.number().int(), amount_cents: z.number().int(), currency: z.enum(CURRENCIES) })
    .nullable(),
});
export const SaleResponse = z.object({ data: SaleData, warnings });

export const RefundRequest = body({
  transaction_id: text(255, M.refund.transactionId),
  reason: z.enum(['refund', 'chargeback'], { error: M.refund.reason }).default('refund'),
  refund_reason: z.string({ error: M.refund.refundReason }).max(1000, M.refund.refundReason).refine(storable, M.refund.refundReason).optional(),
});

/** A repeated refund answers the first one. */
export const RefundData = z.object({
  refund_id: z.string(),
  sale_id: z.string(),
  transaction_id: z.string(),
  reason: z.enum(['refund', 'chargeback']),
  sale_status: z.enum(['paid', 'refunded', 'chargeback']),
  commission_reversed: z.boolean(),
  created_at: z.string(),
});
export const RefundResponse = z.object({ data: RefundData, warnings });

const ReadinessCheck = z.object({ name: z.string(), ok: z.boolean(), detail: z.string() });

export const ReadinessData = z.object({
  program_id: z.number().int(),
  ready: z.boolean(),
  api_key: z.object({ state: z.enum(['active', 'marked_for_rotation']), rotate_by: z.string().nullable() }),
  payment_tracking_mode: z.enum(['processor_connect', 's2s']),
  lead_auth: z.enum(['server_required', 'browser_allowed']),
  allowed_origins_count: z.number().int(),
  partners: z.object({ approved: z.number().int() }),
  referral_links: z.object({ enabled: z.number().int() }),
  test_events: z.object({ click: z.number().int(), lead: z.number().int(), sale: z.number().int() }),
  checks: z.array(ReadinessCheck),
  transaction_id_collisions: z.array(z.object({ transaction_id: z.string(), attempts: z.number().int(), last_seen_at: z.string() })),
  blocked_origins: z.array(z.object({ origin: z.string(), attempts: z.number().int(), last_seen_at: z.string() })),
  checked_at: z.string(),
});
export const ReadinessResponse = z.object({ data: ReadinessData, warnings });

/** The error answers every tracking route documents; each route adds its own (409, 410, 422...). */
export const trackingErrors = {
  400: PlatformError,
  401: z.union([PlatformError, TypedError]),
  403: PlatformError,
  429: TypedError,
  500: PlatformError,
};
