import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { SecretBox } from '../../core/secret-box.js';
import { listDeliveries, redeliver, type DeliveryView } from '../../domain/webhooks/deliveries.js';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  PREVIOUS_SECRET_HOURS,
  rotateSecret,
  sendTestPing,
  updateEndpoint,
  type EndpointView,
} from '../../domain/webhooks/endpoints.js';
import type { UrlPolicy } from '../../domain/webhooks/urls.js';
import { auditContextOf } from '../http/audit.js';
import { createAuth, type Auth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import {
  CreateEndpointRequest,
  DeliveriesCursor,
  DeliveriesPage,
  DeliveriesQuery,
  Delivery,
  DeliveryParams,
  Endpoint,
  EndpointParams,
  EndpointWithSecret,
  TestPingResult,
  UpdateEndpointRequest,
  data,
  webhookErrors,
} from './schemas.js';

export interface WebhookRoutesDeps {
  db: Database;
  authThrottle: FailedAuthThrottle;
  /** Seals the endpoints' secrets; without it creating and rotating answer 500 (no SECRETS_KEY). */
  secretBox: SecretBox | undefined;
  /** WEBHOOK_ALLOW_PRIVATE_URLS and the resolver used to check a URL's host. */
  policy: UrlPolicy;
  clock: () => number;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

const endpointView = (e: EndpointView) => ({
  ...e,
  disabled_at: iso(e.disabled_at),
  failing_since: iso(e.failing_since),
  previous_secret_until: iso(e.previous_secret_until),
  created_at: iso(e.created_at)!,
  updated_at: iso(e.updated_at)!,
});

const deliveryView = ({ position_at: _position, ...d }: DeliveryView) => ({
  ...d,
  next_attempt_at: iso(d.next_attempt_at),
  last_attempt_at: iso(d.last_attempt_at),
  delivered_at: iso(d.delivered_at),
  created_at: iso(d.created_at)!,
  attempts: d.attempts.map((a) => ({ ...a, attempted_at: iso(a.attempted_at)! })),
});

const ROTATE_DESCRIPTION = `Returns the new secret once. The previous secret keeps signing beside it for ${PREVIOUS_SECRET_HOURS} hours: every delivery meanwhile carries two v1 signatures.`;

const config = { surface: 'management' as const };
const base = '/programs/:programId/webhook-endpoints';

interface RouteContext extends WebhookRoutesDeps {
  manage: ReturnType<Auth['require']>;
  read: ReturnType<Auth['require']>;
  box(): SecretBox;
}

/**
 * A program's outgoing webhook endpoints and their delivery log (dashboard session): members read,
 * owners create, change, rotate, test, delete and redeliver. The dispatcher and the delivery worker
 * are processors/webhooks/.
 */
export const webhookRoutes: FastifyPluginAsync<WebhookRoutesDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db: deps.db, throttle: deps.authThrottle });
  const context: RouteContext = {
    ...deps,
    manage: auth.require('management', 'webhooks:manage'),
    read: auth.require('management', 'tracking:read'),
    box: () => {
      if (!deps.secretBox) throw new ApiError(500, M.webhooks.noSecretsKey);
      return deps.secretBox;
    },
  };
  endpointRoutes(app, context);
  secretAndPingRoutes(app, context);
  deliveryRoutes(app, context);
};

/** Create, list, read, change and delete endpoints. */
function endpointRoutes(app: ZodApp, { db, policy, manage, read, box }: RouteContext) {

  app.post(
    base,
    { config, ...manage, schema: { summary: 'Create a webhook endpoint (owners); its signing secret is shown this once', params: programIdParam, body: CreateEndpointRequest, response: { 200: data(EndpointWithSecret), ...webhookErrors } } },
    async (request) => {
      const { url, events, description } = request.body;
      const created = await createEndpoint(db, box(), policy, request.params.programId, { url, events, description: description ?? null }, auditContextOf(request));
      return { data: { ...endpointView(created.endpoint), secret: created.secret } };
    },
  );

  app.get(base, { config, ...read, schema: { summary: "The program's webhook endpoints", params: programIdParam, response: { 200: data(Endpoint.array()), ...webhookErrors } } }, async (request) => ({
    data: (await listEndpoints(db, request.params.programId)).map(endpointView),
  }));

  app.get(`${base}/:endpointId`, { config, ...read, schema: { summary: 'One webhook endpoint', params: EndpointParams, response: { 200: data(Endpoint), ...webhookErrors } } }, async (request) => ({
    data: endpointView(await getEndpoint(db, request.params.programId, request.params.endpointId)),
  }));

  app.patch(
    `${base}/:endpointId`,
    { config, ...manage, schema: { summary: 'Change an endpoint’s URL, events or description, or disable and enable it (owners)', params: EndpointParams, body: UpdateEndpointRequest, response: { 200: data(Endpoint), ...webhookErrors } } },
    async (request) => ({ data: endpointView(await updateEndpoint(db, policy, request.params.programId, request.params.endpointId, request.body, auditContextOf(request))) }),
  );

  app.delete(
    `${base}/:endpointId`,
    { config, ...manage, schema: { summary: 'Delete an endpoint with its delivery log (owners)', params: EndpointParams, response: { 200: data(Endpoint.pick({ id: true })), ...webhookErrors } } },
    async (request) => {
      await deleteEndpoint(db, request.params.programId, request.params.endpointId, auditContextOf(request));
      return { data: { id: request.params.endpointId } };
    },
  );

}

/** Rotate an endpoint's secret; send it a test ping. */
function secretAndPingRoutes(app: ZodApp, { db, clock, manage, box }: RouteContext) {
  app.post(
    `${base}/:endpointId/rotate-secret`,
    { config, ...manage, schema: { summary: 'Rotate the signing secret (owners)', description: ROTATE_DESCRIPTION, params: EndpointParams, response: { 200: data(EndpointWithSecret), ...webhookErrors } } },
    async (request) => {
      const { programId, endpointId } = request.params;
      const rotated = await rotateSecret(db, box(), programId, endpointId, new Date(clock() + PREVIOUS_SECRET_HOURS * 3_600_000), auditContextOf(request));
      return { data: { ...endpointView(rotated.endpoint), secret: rotated.secret } };
    },
  );

  app.post(
    `${base}/:endpointId/test`,
    {
      config,
      ...manage,
      schema: { summary: 'Send a test ping (type webhook.test) through the delivery worker, whatever the endpoint’s filter (owners); its outcome is in the delivery log', params: EndpointParams, response: { 202: data(TestPingResult), ...webhookErrors } },
    },
    async (request, reply) => {
      const ping = await sendTestPing(db, request.params.programId, request.params.endpointId, new Date(clock()), auditContextOf(request));
      return reply.code(202).send({ data: { delivery_id: ping.deliveryId, event_id: ping.eventId, status: 'pending' as const } });
    },
  );

}

/** The delivery log and redelivery. */
function deliveryRoutes(app: ZodApp, { db, manage, read }: RouteContext) {
  app.get(
    `${base}/:endpointId/deliveries`,
    { config, ...read, schema: { summary: 'The endpoint’s delivery log, newest first, each delivery with its attempts', params: EndpointParams, querystring: DeliveriesQuery, response: { 200: DeliveriesPage, ...webhookErrors } } },
    async (request) => {
      const { programId, endpointId } = request.params;
      const { status, limit, cursor } = request.query;
      const page = await listDeliveries(db, programId, endpointId, { status, limit, after: cursor });
      const last = page.deliveries.at(-1);
      return {
        data: page.deliveries.map(deliveryView),
        next_cursor: page.more && last ? DeliveriesCursor.encode({ at: last.position_at, id: last.id }) : null,
      };
    },
  );

  app.post(
    `${base}/:endpointId/deliveries/:deliveryId/redeliver`,
    { config, ...manage, schema: { summary: 'Send a delivery again now, with 3 more days of retries (owners)', params: DeliveryParams, response: { 202: data(Delivery), ...webhookErrors } } },
    async (request, reply) => {
      const { programId, endpointId, deliveryId } = request.params;
      return reply.code(202).send({ data: deliveryView(await redeliver(db, programId, endpointId, deliveryId, auditContextOf(request))) });
    },
  );
}
