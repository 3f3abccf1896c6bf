import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { createClickWriter } from '../../domain/tracking/clicks.js';
import { refused } from '../../domain/errors.js';
import { createLeadWriter } from '../../domain/tracking/leads.js';
import { originAllowedAnywhere } from '../../domain/programs/origins.js';
import { CURRENCIES, PROVIDERS, type Currency } from '../../domain/payments/providers.js';
import { createRefundWriter } from '../../domain/tracking/refunds.js';
import { createSaleWriter, type SaleOutcome } from '../../domain/tracking/sales.js';
import { presentedKeyId, programKeyHook } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { badRequest, forbidden } from '../http/errors.js';
import { M } from '../http/messages.js';
import { credentialRateLimit } from '../http/credential-rate-limit.js';
import { rateLimitHook, type RateLimitStore } from '../http/rate-limit.js';
import { PlatformError, TypedError, additionalData, body, echo, flag, storable, text } from '../http/schemas.js';
import { refusalAnswer } from '../http/surfaces.js';

export interface TrackDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  rateLimits: RateLimitStore;
  clock: () => number;
  platformFeeBps: number;
  docsBaseUrl: string;
}

/** Tracking bodies are small; anything larger is refused before parsing. */
const BODY_LIMIT = 16 * 1024;
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

const customerRef = (name: string) => text(255, M.body.identifier(name)).optional();

const ClickBody = body({
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
      return { url: value, aff };
    })
    .describe('Absolute http(s) URL of the landing page, carrying the aff query parameter'),
  additional_data: additionalData,
});

const LeadBody = body({
  click_id: customerRef('click_id'),
  customer_key: customerRef('customer_key'),
  email: text(320, M.lead.email).optional(),
  additional_data: additionalData,
});

const SaleBody = body({
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
  additional_data: additionalData,
});

const RefundBody = body({
  transaction_id: text(255, M.refund.transactionId),
  reason: z.enum(['refund', 'chargeback'], { error: M.refund.reason }).default('refund'),
  refund_reason: z.string({ error: M.refund.refundReason }).max(1000, M.refund.refundReason).refine(storable, M.refund.refundReason).optional(),
});

const ClickOk = z.object({ success: z.literal(true), click_id: z.string(), cookie_window_days: z.number().int() });

/**
 * The click's 200 is written directly: the handler builds it from a UUID and an integer column,
 * so the zod serializer's check of every answer (most of a click's serialization cost) can never
 * fail. The bytes are what JSON.stringify makes of the object. ClickOk still documents it.
 */
const serializeClickOk = (body: z.infer<typeof ClickOk>) =>
  `{"success":true,"click_id":${JSON.stringify(body.click_id)},"cookie_window_days":${body.cookie_window_days}}`;
function clickSerializers<S>(route: FastifyRouteSchemaDef<S>) {
  return route.httpStatus === '200' ? serializeClickOk : serializerCompiler(route as FastifyRouteSchemaDef<z.ZodType>);
}

const LeadOk = z.object({
  data: z.object({
    customer_id: z.number().int(),
    program_id: z.number().int(),
    click_id: z.string().nullable(),
    status: z.enum(['lead', 'conversion']),
    signup_date: z.string().nullable(),
    provisional: z.literal(true).optional(),
  }),
});

const SaleOk = z.object({
  data: z.object({
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
  }),
});

const RefundOk = z.object({
  data: z.object({
    refund_id: z.string(),
    sale_id: z.string(),
    transaction_id: z.string(),
    reason: z.enum(['refund', 'chargeback']),
    sale_status: z.enum(['paid', 'refunded', 'chargeback']),
    commission_reversed: z.boolean(),
    created_at: z.string(),
  }),
});

const errors = { 400: PlatformError, 401: z.union([PlatformError, TypedError]), 403: PlatformError, 429: TypedError, 500: PlatformError };

/** The browser may call click and lead; it is answered only for origins a program allows. */
function allowBrowser(request: FastifyRequest, reply: FastifyReply) {
  const origin = request.headers.origin;
  if (origin && !request.programKey) reply.header('Access-Control-Allow-Origin', origin).header('Vary', 'Origin');
}

/**
 * A refusal (400, 403, 410, 429) is readable by a page on an origin some program allows, so the
 * browser SDK can report why; an origin no program lists learns nothing, as for the preflight.
 */
function exposeBrowserErrors(db: Database) {
  // Callback style: a successful click passes through without a promise (see the click path in docs/architecture.md).
  return (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) => {
    const origin = request.headers.origin;
    if (reply.statusCode < 400 || !origin || request.programKey || reply.hasHeader('Access-Control-Allow-Origin')) return done(null, payload);
    originAllowedAnywhere(db, origin).then(
      (allowed) => {
        if (allowed) reply.header('Access-Control-Allow-Origin', origin).header('Vary', 'Origin');
        done(null, payload);
      },
      // The answer stands without the header; the page then sees a network error.
      () => done(null, payload),
    );
  };
}

function saleView(outcome: SaleOutcome) {
  const { sale, commission } = outcome;
  return {
    data: {
      sale_id: sale.id,
      transaction_id: sale.transaction_id,
      program_id: sale.program_id,
      customer_id: sale.customer_id,
      amount_cents: sale.amount_cents,
      currency: sale.currency,
      occurred_at: sale.occurred_at.toISOString(),
      status: 'paid' as const,
      conversion: outcome.converted,
      test_mode: sale.test,
      commission: commission && {
        commission_id: commission.id,
        partner_id: commission.partner_id,
        amount_cents: commission.amount_cents,
        currency: commission.currency,
      },
    },
  };
}

export const trackRoutes: FastifyPluginAsync<TrackDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { db } = deps;
  const clicks = createClickWriter(db);
  const recordSale = createSaleWriter(db, deps.platformFeeBps);
  const recordLead = createLeadWriter(db);
  const recordRefund = createRefundWriter(db);
  const limit = (bucket: string, max: number, keyOf: (r: FastifyRequest) => string) =>
    rateLimitHook(deps.rateLimits, { bucket, limit: max, keyOf }, app.log, deps.clock);
  const byIp = (r: FastifyRequest) => r.clientAddress;
  const key = (surface: 'click' | 'lead' | 'sale' | 'refund', anonymousAllowed: boolean) =>
    programKeyHook(db, { surface, anonymousAllowed, docsBaseUrl: deps.docsBaseUrl, throttle: deps.authThrottle });
  // Per API key (the client address when no key, or a key not yet known to be real).
  const saleRefund = credentialRateLimit(deps.rateLimits, { bucket: 'sale_refund', limit: 120, credentialOf: presentedKeyId }, app.log, deps.clock);
  const browserErrors = exposeBrowserErrors(db);

  /** A key and an additional_data.program_id naming another program do not go together. */
  const checkProgramId = (request: FastifyRequest, programId: number | undefined) => {
    if (request.programKey && programId !== undefined && programId !== request.programKey.programId) {
      throw forbidden(M.programIdMismatch);
    }
  };

  for (const path of ['/click', '/lead']) {
    app.options(path, { config: { surface: path === '/click' ? 'click' : 'lead' }, schema: { hide: true } }, async (request, reply) => {
      const origin = request.headers.origin;
      if (origin && (await originAllowedAnywhere(db, origin))) {
        reply
          .header('Access-Control-Allow-Origin', origin)
          .header('Access-Control-Allow-Methods', 'POST')
          .header('Access-Control-Allow-Headers', 'Content-Type')
          .header('Access-Control-Max-Age', '600')
          .header('Vary', 'Origin');
      }
      return reply.status(204).send();
    });
  }

  app.post(
    '/click',
    {
      config: { surface: 'click' },
      bodyLimit: BODY_LIMIT,
      onRequest: [limit('click', 60, byIp), key('click', true)],
      onSend: browserErrors,
      schema: { summary: 'Record a click on a referral link', body: ClickBody, response: { 200: ClickOk, 410: TypedError, ...errors } },
      serializerCompiler: clickSerializers,
    },
    async (request, reply) => {
      const { affiliate_url, additional_data } = request.body;
      checkProgramId(request, additional_data?.program_id);
      const click = await clicks.record({
        affCode: affiliate_url.aff,
        affiliateUrl: affiliate_url.url,
        test: additional_data?.test_mode ?? false,
        origin: request.programKey ? undefined : request.headers.origin,
      });
      allowBrowser(request, reply);
      return { success: true as const, click_id: click.clickId, cookie_window_days: click.cookieWindowDays };
    },
  );

  app.post(
    '/lead',
    {
      config: { surface: 'lead' },
      bodyLimit: BODY_LIMIT,
      onRequest: [limit('lead', 30, byIp), key('lead', true)],
      onSend: browserErrors,
      schema: { summary: 'Record a signup (lead)', body: LeadBody, response: { 200: LeadOk, ...errors } },
    },
    async (request, reply) => {
      const { click_id, customer_key, email, additional_data } = request.body;
      if (click_id === undefined && customer_key === undefined) throw badRequest(M.lead.idRequired);
      checkProgramId(request, additional_data?.program_id);
      const lead = await recordLead({
        clickId: click_id,
        customerKey: customer_key,
        email,
        test: additional_data?.test_mode ?? false,
        keyProgramId: request.programKey?.programId,
        origin: request.programKey ? undefined : request.headers.origin,
      });
      allowBrowser(request, reply);
      return {
        data: {
          customer_id: lead.customerId,
          program_id: lead.programId,
          click_id: lead.clickId,
          status: lead.status,
          signup_date: lead.signupDate?.toISOString() ?? null,
          ...(lead.provisional && !request.programKey ? { provisional: true as const } : {}),
        },
      };
    },
  );

  app.post(
    '/sale',
    {
      config: { surface: 'sale' },
      bodyLimit: BODY_LIMIT,
      onRequest: [saleRefund.beforeAuth, key('sale', false), saleRefund.afterAuth],
      schema: {
        summary: 'Record a payment (sale)',
        body: SaleBody,
        response: { 200: SaleOk, 409: PlatformError, 422: PlatformError, ...errors },
      },
    },
    async (request) => {
      const b = request.body;
      const test = b.additional_data?.test_mode ?? false;
      if (!test) {
        if (b.transaction_id === undefined) throw badRequest(M.sale.transactionId);
        if (b.amount_cents === undefined) throw badRequest(M.sale.amount);
        if (b.customer_key === undefined && b.click_id === undefined) throw refused({ reason: 'customer_not_found' });
      }
      const outcome = await recordSale({
        programId: request.programKey!.programId,
        transactionId: b.transaction_id,
        amountCents: b.amount_cents,
        customerKey: b.customer_key,
        clickId: b.click_id,
        currency: b.currency ?? 'USD',
        occurredAt: b.occurred_at,
        provider: b.provider,
        providerPaymentId: b.provider_payment_id,
        livemode: b.livemode,
        isRecurring: b.is_recurring ?? false,
        saleType: b.sale_type,
        subscriptionId: b.subscription_id,
        test,
      });
      // Stored, yet refused: the sale stays and the answer is the refusal.
      if (outcome.refusal) throw refusalAnswer('sale', outcome.refusal);
      return saleView(outcome);
    },
  );

  app.post(
    '/refund',
    {
      config: { surface: 'refund' },
      bodyLimit: BODY_LIMIT,
      onRequest: [saleRefund.beforeAuth, key('refund', false), saleRefund.afterAuth],
      schema: { summary: 'Record a refund or chargeback of a sale', body: RefundBody, response: { 200: RefundOk, 404: PlatformError, ...errors } },
    },
    async (request) => {
      const { transaction_id, reason, refund_reason } = request.body;
      const refund = await recordRefund({
        programId: request.programKey!.programId,
        transactionId: transaction_id,
        reason,
        refundReason: refund_reason,
      });
      return {
        data: {
          refund_id: refund.refundId,
          sale_id: refund.saleId,
          transaction_id: refund.transactionId,
          reason: refund.reason,
          sale_status: refund.saleStatus,
          commission_reversed: refund.commissionReversed,
          created_at: refund.createdAt.toISOString(),
        },
      };
    },
  );
};
