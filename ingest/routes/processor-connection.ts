import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { paymentsStep } from '../domain/payment-step.js';
import { connectProcessor, disconnectProcessor, processorConnection, processorEventsOf } from '../domain/processor-connections.js';
import { getProgram } from '../domain/programs.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { M } from '../http/messages.js';
import { PlatformError, body, programIdParam } from '../http/schemas.js';
import { PaymentsStatistics } from './dashboard.js';

export interface ProcessorConnectionDeps {
  db: Database;
  /** Failed dashboard-session lookups counted per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
}

const ConnectBody = body({
  account_id: z.string({ error: M.processor.accountId }).regex(/^acct_[A-Za-z0-9]{1,64}$/, M.processor.accountId),
});

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

const errors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 500: PlatformError };

/**
 * A program's payment-processor connection (dashboard session; connecting and disconnecting are
 * for workspace owners) and the processor events that reached the program.
 */
export const processorConnectionRoutes: FastifyPluginAsync<ProcessorConnectionDeps> = async (fastify, { db, authThrottle }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db, throttle: authThrottle });
  const manage = auth.require('management', 'processor:manage');
  const read = auth.require('management', 'tracking:read');
  const config = { surface: 'management' as const };

  const view = async (programId: number) => {
    const program = (await getProgram(db, programId))!;
    return paymentsStep(program.paymentTrackingMode, await processorConnection(db, programId)).statistics;
  };

  app.get(
    '/programs/:programId/processor-connection',
    { config, ...read, schema: { summary: "The program's payment-processor connection", params: programIdParam, response: { 200: z.object({ data: PaymentsStatistics }), ...errors } } },
    async (request) => ({ data: await view(request.params.programId) }),
  );

  app.put(
    '/programs/:programId/processor-connection',
    {
      config,
      ...manage,
      schema: {
        summary: 'Connect a payment-processor account to the program (owners only)',
        description: "Its capabilities follow the processor's signed account.updated events; account.application.deauthorized ends it.",
        params: programIdParam,
        body: ConnectBody,
        response: { 200: z.object({ data: PaymentsStatistics }), ...errors },
      },
    },
    async (request) => {
      await connectProcessor(db, request.params.programId, request.body.account_id);
      return { data: await view(request.params.programId) };
    },
  );

  app.delete(
    '/programs/:programId/processor-connection',
    {
      config,
      ...manage,
      schema: { summary: 'Disconnect the payment-processor account (owners only)', params: programIdParam, response: { 200: z.object({ data: PaymentsStatistics }), ...errors } },
    },
    async (request) => {
      await disconnectProcessor(db, request.params.programId);
      return { data: await view(request.params.programId) };
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
        data: rows.map((r) => ({
          ...r,
          deliveries: Number(r.deliveries),
          event_created_at: r.event_created_at.toISOString(),
          received_at: r.received_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
        })),
      };
    },
  );
};
