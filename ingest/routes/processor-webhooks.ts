import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { createProcessorEventHandler } from '../domain/processor-events.js';
import { ProcessorEvent } from '../domain/processor-objects.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { checkSignature } from '../http/processor-signature.js';
import { PlatformError } from '../http/schemas.js';

export interface ProcessorWebhookDeps {
  db: Database;
  clock: () => number;
  platformFeeBps: number;
  /** The accepted signing secrets (several during a rotation); read per request, so the embedded start can add its own. */
  webhookSecrets: () => readonly string[];
}

/** The processor's events are bigger than our own bodies (a checkout session with its line items). */
const EVENT_BODY_LIMIT = 1024 * 1024;

const Received = z.object({
  data: z.object({
    received: z.literal(true),
    event_id: z.string(),
    outcome: z.enum(['recorded', 'skipped', 'ignored', 'waiting', 'duplicate']),
    reason: z.string().nullable(),
  }),
});

/** Outcomes a brand may want to act on (an event for nobody we know) are logged as warnings. */
const WARN = new Set(['account_not_connected', 'program_not_connected', 'program_id_missing', 'unknown_program', 'unreadable_object']);

/**
 * POST /api/v1/webhooks/processor: the payment processor's signed events. The signature covers
 * the raw bytes, so this plugin alone keeps the body as a Buffer (its own content-type parser).
 * 2xx is sent only after the event's effects committed; a failure answers 500 and the processor retries.
 */
export const processorWebhookRoutes: FastifyPluginAsync<ProcessorWebhookDeps> = async (fastify, deps) => {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: EVENT_BODY_LIMIT }, (_request, body, done) => done(null, body));
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const handleProcessorEvent = createProcessorEventHandler(deps.db, { feeBps: deps.platformFeeBps });

  app.post(
    '/processor',
    {
      config: { surface: 'processorWebhook' },
      bodyLimit: EVENT_BODY_LIMIT,
      schema: {
        summary: 'Payment processor events (Stripe-compatible, signed with the Stripe-Signature header)',
        description:
          'Handles checkout.session.completed, checkout.session.async_payment_succeeded, invoice.payment_succeeded, ' +
          'invoice_payment.paid, charge.refunded, charge.dispute.created, account.updated and account.application.deauthorized; ' +
          'other types are acknowledged and ignored. A repeated event id is acknowledged without effect.',
        response: { 200: Received, 400: PlatformError, 500: PlatformError },
      },
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const header = request.headers['stripe-signature'];
      const signature = checkSignature(raw, typeof header === 'string' ? header : undefined, deps.webhookSecrets(), Math.floor(deps.clock() / 1000));
      if (!signature.ok) {
        request.log.warn({ reason: signature.reason }, 'processor event refused: signature');
        throw badRequest(M.processor.signature);
      }
      let json: unknown;
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        throw badRequest(M.processor.body);
      }
      const parsed = ProcessorEvent.safeParse(json);
      if (!parsed.success) throw badRequest(M.processor.body);
      const event = parsed.data;
      const result = await handleProcessorEvent(event);
      const line = {
        processorEventId: event.id,
        type: event.type,
        account: event.account ?? null,
        outcome: result.outcome,
        reason: result.reason,
        programId: result.programId,
        saleId: result.saleId,
      };
      if (result.reason !== null && WARN.has(result.reason)) request.log.warn(line, 'processor event');
      else request.log.info(line, 'processor event');
      return { data: { received: true as const, event_id: event.id, outcome: result.outcome, reason: result.reason } };
    },
  );
};
