/**
 * The mapping from the event contract to the webhook events (schemas/webhooks.ts): which internal
 * events become which webhook event, and the body every delivery carries.
 */
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type EventType } from '../../schemas/event-contract.js';
import { MAPPED_EVENT_TYPES, WEBHOOK_EVENT_TYPES, WEBHOOK_MAPPING, webhookEventsOf, webhookIdOf, type InternalEvent } from '../../schemas/webhooks.js';

const event = (payload: Record<string, unknown>, test = false): InternalEvent => ({
  eventId: '0b7a1f4e-3c9a-4d5e-9f00-000000000001',
  programId: 7,
  occurredAt: '2026-01-02T03:04:05.123456Z',
  test,
  payload: payload as never,
});

// The one webhook event of an internal event that makes at most one (undefined: none).
const webhookEventOf = (type: EventType, e: InternalEvent) => {
  const all = webhookEventsOf(type, e);
  expect(all.length).toBeLessThanOrEqual(1);
  return all[0];
};

describe('webhook events from the event contract', () => {
  it('maps only types of the contract, to types of the partner-program spec', () => {
    for (const type of MAPPED_EVENT_TYPES) expect(EVENT_TYPES).toContain(type);
    expect(WEBHOOK_EVENT_TYPES).toEqual([
      'lead.created', 'sale.recorded', 'sale.refunded', 'commission.created', 'commission.approved', 'commission.held',
      'commission.reversed', 'commission.paid', 'payout.created', 'payout.paid', 'partner.applied', 'partner.approved',
    ]);
  });

  it('builds the body { type, id, created_at, program_id, data } with the event id as the webhook id', () => {
    const sale = { sale_id: 's1', transaction_id: 't1', program_id: 7, customer_id: 3, partner_id: 4, amount_cents: 1_000, currency: 'EUR', occurred_at: '2026-01-02T03:04:05.123456Z', status: 'paid', is_recurring: false, test: false, created_at: '2026-01-02T03:04:05.123456Z' };
    const mapped = webhookEventOf('sale.recorded', event(sale))!;
    expect(mapped.type).toBe('sale.recorded');
    const body = JSON.parse(mapped.body);
    expect(body).toEqual({
      type: 'sale.recorded', id: '0b7a1f4e-3c9a-4d5e-9f00-000000000001', created_at: '2026-01-02T03:04:05.123456Z', program_id: 7,
      data: { sale_id: 's1', transaction_id: 't1', customer_id: 3, partner_id: 4, amount_cents: 1_000, currency: 'EUR', occurred_at: '2026-01-02T03:04:05.123456Z', status: 'paid', is_recurring: false, test: false, created_at: '2026-01-02T03:04:05.123456Z' },
    });
  });

  it('sends a lead for a recorded or settled lead only, a refund for refunds and chargebacks', () => {
    const customer = (change: string) => ({ change, customer_id: 1, partner_id: 2, click_id: 'c', status: 'lead', signup_date: null });
    expect(webhookEventOf('customer.changed', event(customer('lead')))?.type).toBe('lead.created');
    expect(webhookEventOf('customer.changed', event(customer('settled')))?.type).toBe('lead.created');
    expect(webhookEventOf('customer.changed', event(customer('provisional')))).toBeUndefined();
    expect(webhookEventOf('customer.changed', event(customer('conversion')))).toBeUndefined();
    for (const status of ['refunded', 'chargeback']) expect(webhookEventOf('sale.status_changed', event({ status, sale_id: 's' }))?.type).toBe('sale.refunded');
    expect(JSON.parse(webhookEventOf('commission.created', event({ commission_id: 'c', amount_cents: 5 }, true))!.body).data).toMatchObject({ test: true, amount_cents: 5 });
    // The ledger's events (issue 34).
    const approved = JSON.parse(webhookEventOf('commission.approved', event({ commission_id: 'c', amount_cents: 5, currency: 'USD', by: 'owner', reason: null }))!.body);
    expect(approved).toMatchObject({ type: 'commission.approved', data: { commission_id: 'c', amount_cents: 5, currency: 'USD', by: 'owner', reason: null, test: false } });
    for (const type of ['payout.created', 'payout.paid'] as const) {
      const [first] = webhookEventsOf(type, event({ payout_id: 'p', amount_minor: 900, currency: 'EUR', commission_ids: ['c'], status: type.slice(7) }));
      expect(first!.id).toBe('0b7a1f4e-3c9a-4d5e-9f00-000000000001');
      expect(JSON.parse(first!.body)).toMatchObject({ type, data: { payout_id: 'p', amount_minor: 900, currency: 'EUR', commission_ids: ['c'] } });
    }
    expect(webhookEventOf('payout.canceled', event({ payout_id: 'p' }))).toBeUndefined();
  });

  it('sends, for a paid payout, payout.paid and one commission.paid per commission, each with its own stable id', () => {
    const payout = {
      payout_id: 'p1', program_id: 7, partner_id: 4, currency: 'EUR', amount_minor: 900, status: 'paid', cutoff: '2026-01-01T00:00:00.000000Z',
      commission_ids: ['c1', 'c2'], clawback_entry_ids: [], manual_entry_ids: [], reference: 'WISE-1', created_at: '2026-01-01T00:00:00.000000Z',
      paid_at: '2026-01-02T03:04:05.123456Z', canceled_at: null,
    };
    const made = webhookEventsOf('payout.paid', event(payout));
    expect(made.map((m) => m.type)).toEqual(['payout.paid', 'commission.paid', 'commission.paid']);
    const [, c1, c2] = made.map((m) => ({ id: m.id, body: JSON.parse(m.body) }));
    expect(c1!.body).toEqual({
      type: 'commission.paid', id: c1!.id, created_at: '2026-01-02T03:04:05.123456Z', program_id: 7,
      data: { commission_id: 'c1', payout_id: 'p1', partner_id: 4, currency: 'EUR', paid_at: '2026-01-02T03:04:05.123456Z', test: false },
    });
    expect(c2!.body.data.commission_id).toBe('c2');
    // UUIDv5 of the key in the event id's namespace (the value Python's uuid.uuid5 gives), distinct
    // per commission and from the event's own id, and the same each time the event is mapped again.
    expect(c1!.id).toBe('5923d10e-8817-5f76-b847-4b200d3b2a39');
    expect(c1!.id).toBe(webhookIdOf('0b7a1f4e-3c9a-4d5e-9f00-000000000001', 'commission.paid:c1'));
    expect(new Set(made.map((m) => m.id)).size).toBe(3);
    expect(webhookEventsOf('payout.paid', event(payout))).toEqual(made);
    // A payout of manual entries only pays no commission.
    expect(webhookEventsOf('payout.paid', event({ ...payout, commission_ids: [] })).map((m) => m.type)).toEqual(['payout.paid']);
  });

  it('sends nothing for the internal events without a row', () => {
    const unmapped = EVENT_TYPES.filter((t) => !(t in WEBHOOK_MAPPING)) as EventType[];
    expect(unmapped).toContain('click.recorded');
    for (const type of unmapped) expect(webhookEventsOf(type, event({}))).toEqual([]);
  });
});
