/**
 * The payments surface's request and response schemas: the processor's webhook routes
 * (/api/v1/webhooks/processor) and a program's processor connection and events (/api/tracking/).
 */
import { z } from 'zod';
import { M } from '../http/messages.js';
import { PlatformError, body } from '../http/schemas.js';
import { PaymentsStatistics } from '../dashboard/schemas.js';

// The processor's webhooks

/** What the processor is answered once an event's effects committed. */
export const WebhookReceivedResponse = z.object({
  data: z.object({
    received: z.literal(true),
    event_id: z.string(),
    outcome: z.enum(['recorded', 'skipped', 'ignored', 'waiting', 'duplicate']),
    reason: z.string().nullable(),
  }),
});

/** Any string: a malformed account id is refused as an unknown account is, by the signature check. */
export const AccountParam = z.object({ accountId: z.string() });

// A program's connection

export const ConnectRequest = body({
  account_id: z.string({ error: M.processor.accountId }).regex(/^acct_[A-Za-z0-9]{1,64}$/, M.processor.accountId),
  // What log redaction recognizes as a secret (core/log.ts), whatever line it lands in.
  webhook_secret: z.string({ error: M.processor.webhookSecret }).regex(/^whsec_[A-Za-z0-9_-]{16,128}$/, M.processor.webhookSecret),
});

/** The status endpoint's statistics.payments, and where the account's own webhook endpoint must post. */
export const Connection = PaymentsStatistics.extend({ webhookUrl: z.string().nullable() });
export const ConnectionResponse = z.object({ data: Connection });

export const ProcessorEventsQuery = z.object({
  limit: z.coerce.number({ error: M.processor.limit }).int(M.processor.limit).min(1, M.processor.limit).max(100, M.processor.limit).default(50),
});

export const ProcessorEventItem = z.object({
  event_id: z.string(),
  event_type: z.string(),
  outcome: z.string(),
  reason: z.string().nullable(),
  livemode: z.boolean(),
  sale_id: z.string().nullable(),
  transaction_id: z.string().nullable(),
  /** The amount and currency of the sale the event recorded or refunded; null when it touched none. */
  sale_amount_minor: z.number().int().nullable(),
  sale_currency: z.string().nullable(),
  deliveries: z.number().int(),
  event_created_at: z.string(),
  received_at: z.string(),
  updated_at: z.string(),
});
export const ProcessorEventsResponse = z.object({ data: z.array(ProcessorEventItem) });

/** The error answers the connection and events routes document (the management surface's). */
export const connectionErrors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };
