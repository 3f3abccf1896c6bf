import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import type { SecretBox } from '../../core/secret-box.js';
import { paymentsStep } from '../../domain/payments/payment-step.js';
import { connectProcessor, disconnectProcessor, PREVIOUS_SECRET_HOURS } from '../../domain/payments/account-owners.js';
import { processorConnection, processorEventsOf } from '../../domain/payments/connections.js';
import { getProgram } from '../../domain/programs/programs.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, body, programIdParam } from '../http/schemas.js';
import { PaymentsStatistics } from '../dashboard/routes.js';

export interface ProcessorConnectionDeps {
  db: Database;
  /** Failed dashboard-session lookups counted per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  /** Seals the accounts' webhook secrets; without it connecting answers 500 (no SECRETS_KEY). */
  secretBox: SecretBox | undefined;
  clock: () => number;
  /** The service's public base URL for the account's webhook URL; the request's own origin when undefined. */
  publicBaseUrl: () => string | undefined;
}

const ConnectBody = body({
  account_id: z.string({ error: M.processor.accountId }).regex(/^acct_[A-Za-z0-9]{1,64}$/, M.processor.accountId),
  // What log redaction recognizes as a secret (core/log.ts), whatever line it lands in.
  webhook_secret: z.string({ error: M.processor.webhookSecret }).regex(/^whsec_[A-Za-z0-9_-]{16,128}$/, M.processor.webhookSecret),
});

/** The status endpoint's statistics.payments, and where the account's own webhook endpoint must post. */
const Connection = PaymentsStatistics.extend({ webhookUrl: z.string().nullable() });

const EventsQuery = z.object({
  limit: z.coerce.number({ error: M.processor.limit }).int(M.processor.limit).min(1, M.processor.limit).max(100, M.processor.limit).default(50),
});

const EventItem = z.object({
  event_id: z.string(),
  event_type: z.string(),
  outcome: z.string(),
  reason: z.string().nullable(),
  livemode: z.boolean(),
  sale_id: z.string().nullable(),
  transaction_id: z.string().nullable(),
  deliveries: z.number().int(),
  event_created_at: z.string(),
  received_at: z.string(),
  updated_at: z.string(),
});

const errors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };

const secondsToIso = (seconds: number) => {
  // Clamped to what a JS date holds: a time stored before created was checked may lie beyond it.
  const ms = Math.max(-8.64e15, Math.min(8.64e15, seconds * 1000));
  return new Date(ms).toISOString();
};

/**
 * A program's payment-processor connection (dashboard session; connecting and disconnecting are
 * for workspace owners) and the processor events that reached the program.
 */
export const processorConnectionRoutes: FastifyPluginAsync<ProcessorConnectionDeps> = async (fastify, { db, authThrottle, secretBox, clock, publicBaseUrl }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db, throttle: authThrottle });
  const manage = auth.require('management', 'processor:manage');
  const read = auth.require('management', 'tracking:read');
  const config = { surface: 'management' as const };

  const view = async (request: FastifyRequest, programId: number) => {
    const program = (await getProgram(db, programId))!;
    const connection = await processorConnection(db, programId);
    const base = publicBaseUrl() ?? `${request.protocol}://${request.host}`;
    return {
      ...paymentsStep(program.paymentTrackingMode, connection).statistics,
      webhookUrl: connection?.accountId ? `${base}/api/v1/webhooks/processor/${connection.accountId}` : null,
    };
  };

  app.get(
    '/programs/:programId/processor-connection',
    { config, ...read, schema: { summary: "The program's payment-processor connection", params: programIdParam, response: { 200: z.object({ data: Connection }), ...errors } } },
    async (request) => ({ data: await view(request, request.params.programId) }),
  );

  app.put(
    '/programs/:programId/processor-connection',
    {
      config,
      ...manage,
      schema: {
        summary: 'Connect a payment-processor account to the program (owners only)',
        description:
          "webhook_secret is the signing secret of the webhook endpoint created in the account's own processor dashboard, " +
          'pointed at webhookUrl; it is stored encrypted and never returned. The connection is pending_verification until ' +
          'the first valid event reaches webhookUrl. An account verified by another workspace answers 409. Sending a new ' +
          `secret rotates it: the previous one stays valid ${PREVIOUS_SECRET_HOURS} hours. Capabilities follow account.updated; ` +
          'account.application.deauthorized ends the connection.',
        params: programIdParam,
        body: ConnectBody,
        response: { 200: z.object({ data: Connection }), ...errors },
      },
    },
    async (request) => {
      if (!secretBox) throw new ApiError(500, M.processor.noSecretsKey);
      const { programId } = request.params;
      const program = (await getProgram(db, programId))!;
      const outcome = await connectProcessor(db, secretBox, {
        programId,
        workspaceId: Number(program.workspace_id),
        accountId: request.body.account_id,
        webhookSecret: request.body.webhook_secret,
        previousUntil: new Date(clock() + PREVIOUS_SECRET_HOURS * 3_600_000),
      });
      if (outcome === 'taken') throw new ApiError(409, M.processor.accountTaken);
      return { data: await view(request, programId) };
    },
  );

  app.delete(
    '/programs/:programId/processor-connection',
    {
      config,
      ...manage,
      schema: {
        summary: 'Disconnect the payment-processor account (owners only); the workspace gives the account up when no other program of it uses the account',
        params: programIdParam,
        response: { 200: z.object({ data: Connection }), ...errors },
      },
    },
    async (request) => {
      const { programId } = request.params;
      const program = (await getProgram(db, programId))!;
      await disconnectProcessor(db, programId, Number(program.workspace_id));
      return { data: await view(request, programId) };
    },
  );

  app.get(
    '/programs/:programId/processor-events',
    {
      config,
      ...read,
      schema: {
        summary: 'The processor events that reached the program, newest first, with their outcome (recorded, skipped and why, ignored, waiting) and delivery count',
        params: programIdParam,
        querystring: EventsQuery,
        response: { 200: z.object({ data: z.array(EventItem) }), ...errors },
      },
    },
    async (request) => {
      const rows = await processorEventsOf(db, request.params.programId, request.query.limit);
      return {
        data: rows.map(({ event_created_seconds, ...r }) => ({
          ...r,
          deliveries: Number(r.deliveries),
          event_created_at: secondsToIso(Number(event_created_seconds)),
          received_at: r.received_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
        })),
      };
    },
  );
};
