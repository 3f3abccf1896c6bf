/**
 * Outgoing webhooks on the wire (partner-program.md, "Outgoing webhooks"): the event types a brand
 * can subscribe to, the body every delivery carries, and the one table that turns the internal
 * events of the event contract (event-contract.ts) into them. The dispatcher (processors/webhooks/)
 * reads the table; the endpoints API (ingest/webhooks/) offers its types as filters. A later
 * internal event (partner.applied...) joins by adding its row to WEBHOOK_MAPPING.
 */
import { createHash } from 'node:crypto';
import type { EventPayloads, EventType } from './event-contract.js';

/** The contract's events, in its order. */
export const WEBHOOK_EVENT_TYPES = [
  'lead.created',
  'sale.recorded',
  'sale.refunded',
  'commission.created',
  'commission.approved',
  'commission.held',
  'commission.reversed',
  'commission.paid',
  'payout.created',
  'payout.paid',
  'partner.applied',
  'partner.approved',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The test ping's type (POST .../test): sent to the one endpoint asked, whatever its filter. */
export const TEST_PING_TYPE = 'webhook.test';

/** Every delivery's body; `id` is the webhook's id (webhookIdOf), also the webhook-id header. */
export interface WebhookBody {
  type: WebhookEventType | typeof TEST_PING_TYPE;
  id: string;
  created_at: string;
  program_id: number;
  data: Record<string, unknown>;
}

/** The envelope of a decoded internal event, as a mapping row reads it. */
export interface InternalEvent<T extends EventType = EventType> {
  eventId: string;
  programId: number;
  /** ISO 8601 UTC, as the event log carries it. */
  occurredAt: string;
  test: boolean;
  payload: EventPayloads[T];
}

/**
 * One webhook a row makes. `idKey` is set when one internal event makes several webhooks: it tells
 * them apart, and their ids derive from it and the event's id (webhookIdOf).
 */
interface MappedWebhook {
  type: WebhookEventType;
  data: Record<string, unknown>;
  idKey?: string;
}

/** One row: which webhook events an internal event becomes (undefined or []: none), and their data. */
type MappingRow<T extends EventType> = (event: InternalEvent<T>) => MappedWebhook | readonly MappedWebhook[] | undefined;

/**
 * A webhook's id: the internal event's id, or, for one of several webhooks of an event, the UUIDv5
 * (RFC 9562) of its key in the event id's namespace. Deterministic, so every retry, every
 * redelivery of the internal event by the log, and every re-read of the log gives the same id:
 * the queue's unique (endpoint, event id) then makes no second delivery, and a receiver
 * deduplicating on webhook-id sees one. A UUID, because the queue keys webhook events by uuid.
 */
export function webhookIdOf(eventId: string, idKey?: string): string {
  if (idKey === undefined) return eventId;
  const hash = createHash('sha1').update(Buffer.from(eventId.replace(/-/g, ''), 'hex')).update(idKey, 'utf8').digest().subarray(0, 16);
  hash[6] = (hash[6]! & 0x0f) | 0x50; // version 5
  hash[8] = (hash[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = hash.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// The fields of a payload a brand receives: the payload's own names, times as ISO 8601 UTC text.
const pick = <P extends object, K extends keyof P>(payload: P, keys: readonly K[]) => {
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key as string] = payload[key];
  return out;
};

const COMMISSION_FIELDS = ['commission_id', 'sale_id', 'partner_id', 'amount_cents', 'currency', 'status', 'created_at'] as const;
const PAYOUT_FIELDS = [
  'payout_id', 'partner_id', 'currency', 'amount_minor', 'status', 'cutoff', 'commission_ids', 'clawback_entry_ids', 'manual_entry_ids', 'reference',
  'created_at', 'paid_at',
] as const;

/**
 * The mapping. Internal events without a row (clicks, fees, partial refunds, adjustments, ledger
 * entries, canceled payouts, test-log entries) send nothing; decisions/outgoing-webhooks.md lists why and which contract events no
 * internal event produces yet.
 */
export const WEBHOOK_MAPPING: { readonly [T in EventType]?: MappingRow<T> } = {
  // A lead: recorded by the server, or a browser lead once settled; a provisional browser lead is
  // not one yet, and a customer whose first event is a sale never was one.
  'customer.changed': ({ payload, test }) =>
    payload.change === 'lead' || payload.change === 'settled'
      ? {
          type: 'lead.created',
          data: { ...pick(payload, ['customer_id', 'partner_id', 'click_id', 'status', 'signup_date'] as const), test },
        }
      : undefined,
  'sale.recorded': ({ payload }) => ({
    type: 'sale.recorded',
    data: pick(payload, ['sale_id', 'transaction_id', 'customer_id', 'partner_id', 'amount_cents', 'currency', 'occurred_at', 'status', 'is_recurring', 'test', 'created_at'] as const),
  }),
  'sale.status_changed': ({ payload, test }) =>
    payload.status === 'refunded' || payload.status === 'chargeback'
      ? { type: 'sale.refunded', data: { ...pick(payload, ['sale_id', 'transaction_id', 'status', 'reason', 'refund_id', 'changed_at'] as const), test } }
      : undefined,
  'commission.created': ({ payload, test }) => ({ type: 'commission.created', data: { ...pick(payload, COMMISSION_FIELDS), test } }),
  'commission.reversed': ({ payload, test }) => ({ type: 'commission.reversed', data: { ...pick(payload, COMMISSION_FIELDS), test } }),
  // The ledger's events (issue 34): an approval (by an owner, or at the end of its hold), a payout made and paid.
  'commission.approved': ({ payload, test }) => ({
    type: 'commission.approved',
    data: { ...pick(payload, ['commission_id', 'sale_id', 'partner_id', 'amount_cents', 'currency', 'approved_at', 'by', 'reason'] as const), test },
  }),
  'payout.created': ({ payload, test }) => ({ type: 'payout.created', data: { ...pick(payload, PAYOUT_FIELDS), test } }),
  // Issue 31: a commission held for review (a fraud rule, or its partner's ban), with its reasons.
  'commission.held': ({ payload, test }) => ({
    type: 'commission.held',
    data: { ...pick(payload, ['commission_id', 'sale_id', 'partner_id', 'amount_cents', 'currency', 'held_at', 'reasons'] as const), test },
  }),
  // Issue 31: an application and an owner's approval.
  'partner.applied': ({ payload, test }) => ({
    type: 'partner.applied',
    data: { ...pick(payload, ['partner_program_id', 'partner_id', 'name', 'email', 'website', 'created_at'] as const), test },
  }),
  'partner.approved': ({ payload, test }) => ({
    type: 'partner.approved',
    data: { ...pick(payload, ['partner_program_id', 'partner_id', 'name', 'email', 'approved_at'] as const), test },
  }),
  // A paid payout pays its commissions: besides payout.paid, one commission.paid per commission it
  // covers. The payload names them without their amounts, so commission.paid carries none (the
  // brand has each amount from commission.created/approved); decisions/outgoing-webhooks.md.
  'payout.paid': ({ payload, test }) => [
    { type: 'payout.paid', data: { ...pick(payload, PAYOUT_FIELDS), test } },
    ...payload.commission_ids.map((commissionId) => ({
      type: 'commission.paid' as const,
      data: { commission_id: commissionId, ...pick(payload, ['payout_id', 'partner_id', 'currency', 'paid_at'] as const), test },
      idKey: `commission.paid:${commissionId}`,
    })),
  ],
};

/** The internal event types some row maps (the dispatcher reads only their topics). */
export const MAPPED_EVENT_TYPES = Object.keys(WEBHOOK_MAPPING) as EventType[];

/** A webhook event ready for the queue: its id (the webhook-id), type and body's JSON text. */
export interface WebhookEvent {
  id: string;
  type: WebhookEventType;
  body: string;
}

/** The webhook events of an internal event (none when it maps to none): the one place the mapping is applied. */
export function webhookEventsOf(type: EventType, event: InternalEvent): WebhookEvent[] {
  const row = WEBHOOK_MAPPING[type] as MappingRow<EventType> | undefined;
  const mapped = row?.(event);
  if (!mapped) return [];
  return (Array.isArray(mapped) ? mapped : [mapped]).map((m: MappedWebhook) => {
    const id = webhookIdOf(event.eventId, m.idKey);
    const body: WebhookBody = { type: m.type, id, created_at: event.occurredAt, program_id: event.programId, data: m.data };
    return { id, type: m.type, body: JSON.stringify(body) };
  });
}

/** What binds an endpoint's sealed secret to it (core/secret-box.ts): a sealed value copied to another endpoint does not open. */
export const endpointSecretContext = (endpointId: string) => `webhook-endpoint-secret:${endpointId}`;
