/**
 * Issue 31, point 5: commission.held reaches outgoing webhooks (partner-program.md, "Outgoing
 * webhooks") with the reasons and without the evidence (no customer email leaves the service).
 */
import { describe, expect, it } from 'vitest';
import { webhookEventsOf } from '../../schemas/webhooks.js';

describe('commission.held as a webhook', () => {
  it('is one commission.held delivery with the commission, its time and reasons', () => {
    const payload = {
      commission_id: '6f1c2d3e-0000-4000-8000-000000000001', sale_id: '6f1c2d3e-0000-4000-8000-000000000002', program_id: 7, partner_id: 3,
      amount_cents: 1_234, currency: 'EUR', held_at: '2026-01-02T03:04:05.123456Z', reasons: ['self_referral', 'fast_conversion'],
    };
    const [delivery, ...more] = webhookEventsOf('commission.held', {
      eventId: '0b7a1f4e-3c9a-4d5e-9f00-000000000009', programId: 7, occurredAt: '2026-01-02T03:04:05.123456Z', test: false, payload: payload as never,
    });
    expect(more).toEqual([]);
    expect(delivery!.type).toBe('commission.held');
    expect(JSON.parse(delivery!.body)).toEqual({
      type: 'commission.held', id: delivery!.id, created_at: '2026-01-02T03:04:05.123456Z', program_id: 7,
      data: {
        commission_id: payload.commission_id, sale_id: payload.sale_id, partner_id: 3, amount_cents: 1_234, currency: 'EUR',
        held_at: payload.held_at, reasons: ['self_referral', 'fast_conversion'], test: false,
      },
    });
  });
});
