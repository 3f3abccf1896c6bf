/**
 * Outgoing webhooks on the wire (partner-program.md, "Outgoing webhooks"): the event types a brand
 * can subscribe to, the body every delivery carries, and the one table that turns the internal
 * events of the event contract (event-contract.ts) into them. The dispatcher (processors/webhooks/)
 * reads the table; the endpoints API (ingest/webhooks/) offers its types as filters. A later
 * internal event (commission.approved, payout.paid...) joins by adding its row to WEBHOOK_MAPPING.
 */
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

export const isWebhookEventType = (value: string): value is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);

/** Every delivery's body; `id` is the internal event's id, also the webhook-id header. */
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

/** One row: which webhook event an internal event becomes (undefined: none), and its data. */
type MappingRow<T extends EventType> = (event: InternalEvent<T>) => { type: WebhookEventType; data: Record<string, unknown> } | undefined;

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
  'payout.paid': ({ payload, test }) => ({ type: 'payout.paid', data: { ...pick(payload, PAYOUT_FIELDS), test } }),
};

/** The internal event types some row maps (the dispatcher reads only their topics). */
export const MAPPED_EVENT_TYPES = Object.keys(WEBHOOK_MAPPING) as EventType[];

/** The webhook event of an internal event, as its body's JSON text; undefined when it maps to none. */
export function webhookEventOf(type: EventType, event: InternalEvent): { type: WebhookEventType; body: string } | undefined {
  const row = WEBHOOK_MAPPING[type] as MappingRow<EventType> | undefined;
  const mapped = row?.(event);
  if (!mapped) return undefined;
  const body: WebhookBody = { type: mapped.type, id: event.eventId, created_at: event.occurredAt, program_id: event.programId, data: mapped.data };
  return { type: mapped.type, body: JSON.stringify(body) };
}

/** What binds an endpoint's sealed secret to it (core/secret-box.ts): a sealed value copied to another endpoint does not open. */
export const endpointSecretContext = (endpointId: string) => `webhook-endpoint-secret:${endpointId}`;
