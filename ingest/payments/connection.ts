import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { SecretBox } from '../../core/secret-box.js';
import { paymentsStep } from '../../domain/payments/payment-step.js';
import { connectProcessor, disconnectProcessor, PREVIOUS_SECRET_HOURS } from '../../domain/payments/account-owners.js';
import { processorConnection } from '../../domain/payments/connections.js';
import { getProgram } from '../../domain/programs/programs.js';
import { auditContextOf } from '../http/audit.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam } from '../http/schemas.js';
import { processorEventRoutes } from './processor-events.js';
import { ConnectRequest, ConnectionResponse, connectionErrors } from './schemas.js';

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

const CONNECT_DESCRIPTION =
  "webhook_secret is the signing secret of the webhook endpoint created in the account's own processor dashboard, " +
  'pointed at webhookUrl; it is stored encrypted and never returned. The connection is pending_verification until ' +
  'the first valid event reaches webhookUrl. An account verified by another workspace answers 409. Sending a new ' +
  `secret rotates it: the previous one stays valid ${PREVIOUS_SECRET_HOURS} hours. Capabilities follow account.updated; ` +
  'account.application.deauthorized ends the connection.';

/** The connection as the routes answer it: the payments step's statistics, and where the account's own events post. */
function connectionView(db: Database, publicBaseUrl: () => string | undefined) {
  return async (request: FastifyRequest, programId: number) => {
    const program = (await getProgram(db, programId))!;
    const connection = await processorConnection(db, programId);
    const base = publicBaseUrl() ?? `${request.protocol}://${request.host}`;
    return {
      ...paymentsStep(program.paymentTrackingMode, connection).statistics,
      webhookUrl: connection?.accountId ? `${base}/api/v1/webhooks/processor/${connection.accountId}` : null,
    };
  };
}

/**
 * A program's payment-processor connection (dashboard session; connecting and disconnecting are
 * for workspace owners) and the processor events that reached the program (processor-events.ts).
 */
export const processorConnectionRoutes: FastifyPluginAsync<ProcessorConnectionDeps> = async (fastify, { db, authThrottle, secretBox, clock, publicBaseUrl }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db, throttle: authThrottle });
  const manage = auth.require('management', 'processor:manage');
  const read = auth.require('management', 'tracking:read');
  const config = { surface: 'management' as const };
  const view = connectionView(db, publicBaseUrl);

  app.get(
    '/programs/:programId/processor-connection',
    { config, ...read, schema: { summary: "The program's payment-processor connection", params: programIdParam, response: { 200: ConnectionResponse, ...connectionErrors } } },
    async (request) => ({ data: await view(request, request.params.programId) }),
  );

  app.put(
    '/programs/:programId/processor-connection',
    {
      config,
      ...manage,
      schema: {
        summary: 'Connect a payment-processor account to the program (owners only)',
        description: CONNECT_DESCRIPTION,
        params: programIdParam,
        body: ConnectRequest,
        response: { 200: ConnectionResponse, ...connectionErrors },
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
      }, auditContextOf(request));
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
        response: { 200: ConnectionResponse, ...connectionErrors },
      },
    },
    async (request) => {
      const { programId } = request.params;
      const program = (await getProgram(db, programId))!;
      await disconnectProcessor(db, programId, Number(program.workspace_id), auditContextOf(request));
      return { data: await view(request, programId) };
    },
  );

  processorEventRoutes(app, { db, auth });
};
