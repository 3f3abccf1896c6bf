import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { SecretBox } from '../../core/secret-box.js';
import { accountSigning, markAccountVerified, type EventScope } from '../../domain/payments/account-owners.js';
import { createProcessorEventHandler } from '../../domain/payments/events.js';
import { eventProblem, ProcessorEvent } from '../../domain/payments/objects.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { checkSignature } from './signature.js';
import { rateLimitHook, type RateLimitStore } from '../http/rate-limit.js';
import { throttledRefusalLog } from '../http/refusal-log.js';
import { PlatformError, TypedError } from '../http/schemas.js';
import { AccountParam, WebhookReceivedResponse } from './schemas.js';

export interface ProcessorWebhookDeps {
  db: Database;
  clock: () => number;
  platformFeeBps: number;
  /** The accepted signing secrets (several during a rotation); read per request, so the embedded start can add its own. */
  webhookSecrets: () => readonly string[];
  /** Opens the accounts' own signing secrets; without it an account's URL refuses every event (400). */
  secretBox: SecretBox | undefined;
  rateLimits: RateLimitStore;
  /** Requests a minute per client address, refused ones included (PROCESSOR_WEBHOOK_RATE_LIMIT). */
  rateLimit: number;
}

/**
 * Ours (the spec has no webhook route): 100 a second from one address, a fifth of the route's
 * design rate (500 events a second, issue 12) from just one of the processor's sending addresses.
 * Past it the answer is 429 and the processor retries the event later, so nothing is lost.
 */
export const PROCESSOR_WEBHOOK_RATE_LIMIT = 6_000;

/** The processor's events are bigger than our own bodies (a checkout session with its line items). */
const EVENT_BODY_LIMIT = 1024 * 1024;

/** Outcomes a brand may want to act on (an event for nobody we know) are logged as warnings. */
const WARN = new Set([
  'account_not_connected', 'account_not_verified', 'program_not_connected', 'program_id_missing', 'unknown_program', 'unreadable_object', 'other_account',
]);

const ACCOUNT_ID = /^acct_[A-Za-z0-9]{1,64}$/;

/**
 * What an unknown account's events are checked against: they are refused exactly as a wrong
 * signature is, after the same work, so the answer says nothing of which accounts exist.
 */
const NO_ACCOUNT_SECRETS = [`whsec_${randomBytes(24).toString('base64url')}`];

const EVENT_PROBLEM = { created: M.processor.created, text: M.processor.text, shape: M.processor.body } as const;

const HANDLED =
  'Handles checkout.session.completed, checkout.session.async_payment_succeeded, invoice.payment_succeeded, ' +
  'invoice_payment.paid, charge.refunded, charge.dispute.created, account.updated and account.application.deauthorized; ' +
  'other types are acknowledged and ignored. A repeated event id is acknowledged without effect.';

type RefusalLog = ReturnType<typeof throttledRefusalLog>;

/**
 * Anyone can post here: every request counts against its client address, refused ones too
 * (before the body is read), and refusals are logged at most once per address a minute.
 */
function limitAndLogRefusals(fastify: FastifyInstance, deps: ProcessorWebhookDeps): RefusalLog {
  const refusals = throttledRefusalLog({ log: fastify.log, clock: deps.clock, what: 'processor webhook refusals' });
  fastify.addHook('onRoute', (route) => {
    if (route.config) route.config.logRefusal = refusals.log;
    if (route.schema?.response) route.schema.response = { ...(route.schema.response as object), 429: TypedError };
  });
  fastify.addHook(
    'onRequest',
    rateLimitHook(deps.rateLimits, { bucket: 'processor_webhook', limit: deps.rateLimit, keyOf: (r) => r.clientAddress }, fastify.log, deps.clock),
  );
  fastify.addHook('onClose', (_instance, done) => {
    refusals.flush();
    done();
  });
  return refusals;
}

/** The signed body as an event; a bad signature or body is refused (400) before anything is written. */
const eventReader = (clock: () => number, refusals: RefusalLog) => (request: FastifyRequest, secrets: readonly string[]): ProcessorEvent => {
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  const header = request.headers['stripe-signature'];
  const signature = checkSignature(raw, typeof header === 'string' ? header : undefined, secrets, Math.floor(clock() / 1000));
  if (!signature.ok) {
    refusals.log(request, { reason: signature.reason }, 'processor event refused: signature');
    throw badRequest(M.processor.signature);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest(M.processor.body);
  }
  const parsed = ProcessorEvent.safeParse(json);
  if (!parsed.success) throw badRequest(EVENT_PROBLEM[eventProblem(parsed.error, json)]);
  return parsed.data;
};

/** Applies the event, logs its outcome (a warning when a brand may want to act) and answers it. */
const eventRecorder = (handleProcessorEvent: ReturnType<typeof createProcessorEventHandler>) => async (log: FastifyBaseLogger, event: ProcessorEvent, scope: EventScope) => {
  const result = await handleProcessorEvent(event, scope);
  const line = {
    processorEventId: event.id,
    type: event.type,
    account: event.account ?? null,
    via: scope.channel,
    outcome: result.outcome,
    reason: result.reason,
    programId: result.programId,
    saleId: result.saleId,
  };
  if (result.reason !== null && WARN.has(result.reason)) log.warn(line, 'processor event');
  else log.info(line, 'processor event');
  return { data: { received: true as const, event_id: event.id, outcome: result.outcome, reason: result.reason } };
};

/**
 * POST /api/v1/webhooks/processor (the operator's secrets) and /api/v1/webhooks/processor/:accountId
 * (that account's own secret, issue 27): the payment processor's signed events. The signature covers
 * the raw bytes, so this plugin alone keeps the body as a Buffer (its own content-type parser).
 * 2xx is sent only after the event's effects committed; a failure answers 500 and the processor retries.
 */
export const processorWebhookRoutes: FastifyPluginAsync<ProcessorWebhookDeps> = async (fastify, deps) => {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: EVENT_BODY_LIMIT }, (_request, body, done) => done(null, body));
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const record = eventRecorder(createProcessorEventHandler(deps.db, { feeBps: deps.platformFeeBps }));
  const readEvent = eventReader(deps.clock, limitAndLogRefusals(fastify, deps));

  app.post(
    '/processor',
    {
      config: { surface: 'processorWebhook' },
      bodyLimit: EVENT_BODY_LIMIT,
      schema: {
        summary: "Payment processor events signed with the operator's secrets (Stripe-compatible, Stripe-Signature header)",
        description:
          `${HANDLED} An event naming an account (Connect) acts only on programs of the workspace that verified that account, ` +
          'and only on the program its metadata names.',
        response: { 200: WebhookReceivedResponse, 400: PlatformError, 500: PlatformError },
      },
    },
    async (request) => record(request.log, readEvent(request, deps.webhookSecrets()), { channel: 'operator' }),
  );

  app.post(
    '/processor/:accountId',
    {
      config: { surface: 'processorWebhook' },
      bodyLimit: EVENT_BODY_LIMIT,
      schema: {
        summary: "A processor account's own events, signed with the secret its workspace connected it with",
        description:
          `${HANDLED} The first valid event verifies the account's connection; events act only on the programs of that ` +
          'workspace connected to the account. An unknown account is refused as a wrong signature is.',
        params: AccountParam,
        response: { 200: WebhookReceivedResponse, 400: PlatformError, 500: PlatformError },
      },
    },
    async (request) => {
      const { accountId } = request.params;
      const signing = ACCOUNT_ID.test(accountId) && deps.secretBox ? await accountSigning(deps.db, deps.secretBox, accountId, deps.clock()) : undefined;
      if (signing?.unreadable) request.log.error({ account: accountId }, 'a processor account secret does not open with SECRETS_KEY: was the key changed?');
      const event = readEvent(request, signing?.secrets.length ? signing.secrets : NO_ACCOUNT_SECRETS);
      if (!signing) throw badRequest(M.processor.signature);
      if (event.account && event.account !== accountId) throw badRequest(M.processor.otherAccount);
      if (!signing.verified) await markAccountVerified(deps.db, accountId, signing.claim);
      return record(request.log, { ...event, account: accountId }, { channel: 'account', accountId, workspaceId: signing.workspaceId });
    },
  );
};
