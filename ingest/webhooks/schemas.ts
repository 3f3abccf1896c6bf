/**
 * The outgoing webhooks surface's request and response schemas (issue 32; partner-program.md,
 * "Outgoing webhooks"): a program's endpoints and their delivery log under /api/tracking/.
 */
import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../../schemas/webhooks.js';
import { listCursor } from '../agent/cursor.js';
import { M } from '../http/messages.js';
import { PlatformError, body, programIdParam, storable } from '../http/schemas.js';

const W = M.webhooks;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Absolute http(s), no fragment, at most 2048 characters; whether https and which addresses is the domain's (domain/webhooks/urls.ts). */
const url = z
  .string({ error: W.url })
  .max(2048, W.url)
  .refine(storable, W.url)
  .refine((value) => {
    try {
      const parsed = new URL(value);
      return (parsed.protocol === 'https:' || parsed.protocol === 'http:') && parsed.hostname !== '' && parsed.hash === '' && !value.includes('#');
    } catch {
      return false;
    }
  }, W.url);

const events = z
  .array(z.enum(WEBHOOK_EVENT_TYPES, { error: W.events(WEBHOOK_EVENT_TYPES) }), { error: W.events(WEBHOOK_EVENT_TYPES) })
  .min(1, W.events(WEBHOOK_EVENT_TYPES))
  .max(WEBHOOK_EVENT_TYPES.length, W.events(WEBHOOK_EVENT_TYPES))
  .refine((list) => new Set(list).size === list.length, W.events(WEBHOOK_EVENT_TYPES));

const description = z.string({ error: W.description }).min(1, W.description).max(500, W.description).refine(storable, W.description).nullable();

export const CreateEndpointRequest = body({ url, events, description: description.optional() });

export const UpdateEndpointRequest = body({
  url: url.optional(),
  events: events.optional(),
  description: description.optional(),
  enabled: z.boolean({ error: W.enabled }).optional(),
});

export const EndpointParams = programIdParam.extend({ endpointId: z.string({ error: W.endpointId }).regex(UUID, W.endpointId) });
export const DeliveryParams = EndpointParams.extend({ deliveryId: z.string({ error: W.deliveryId }).regex(UUID, W.deliveryId) });

export const DeliveriesCursor = listCursor('webhook_deliveries', 'postgres', 'uuid');

export const DeliveriesQuery = z.strictObject(
  {
    status: z.enum(['pending', 'delivered', 'failed'], { error: W.status }).optional().describe('Only deliveries in this state'),
    limit: z.coerce.number({ error: W.limit }).int(W.limit).min(1, W.limit).max(100, W.limit).default(50).describe('Deliveries per page, 1 to 100 (default 50)'),
    cursor: DeliveriesCursor.schema,
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys) : M.dashboard.badQuery) },
);

const time = z.string().nullable();

export const Endpoint = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(z.string()),
  status: z.enum(['enabled', 'disabled']),
  disabled_reason: z.enum(['failing', 'manual']).nullable().describe('failing: every attempt failed for 5 days; manual: a brand disabled it'),
  disabled_at: time,
  failing_since: time.describe('The first failed attempt since the last success; null while it succeeds'),
  previous_secret_until: time.describe('After a rotation: until when the previous secret also signs'),
  created_at: z.string(),
  updated_at: z.string(),
});

/** Creation and rotation: the endpoint and its signing secret, shown this once. */
export const EndpointWithSecret = Endpoint.extend({ secret: z.string().describe('The signing secret (whsec_...): shown once, store it now') });

export const Attempt = z.object({
  attempted_at: z.string(),
  status_code: z.number().int().nullable().describe('The receiver’s status; null when no answer came'),
  duration_ms: z.number().int(),
  response_body: z.string().nullable().describe('The start of the answer (at most 4 KiB)'),
  error: z.string().nullable().describe('Why no answer came (refused address, timeout, connection error)'),
});

export const Delivery = z.object({
  id: z.string(),
  event_id: z.string().describe('The webhook-id header of every attempt'),
  event_type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempt_count: z.number().int(),
  next_attempt_at: time,
  last_attempt_at: time,
  delivered_at: time,
  created_at: z.string(),
  attempts: z.array(Attempt),
});

export const TestPingResult = z.object({ delivery_id: z.string(), event_id: z.string(), status: z.literal('pending') });

export const data = <T extends z.ZodType>(shape: T) => z.object({ data: shape });
export const DeliveriesPage = z.object({ data: z.array(Delivery), next_cursor: z.string().nullable() });

export const webhookErrors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };
