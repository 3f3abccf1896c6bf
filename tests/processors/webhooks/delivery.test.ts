/**
 * Outgoing webhooks end to end in one process (issue 32, points 2 to 4): tracking calls, the relay
 * to the dispatcher, the delivery worker, and a real local receiver that verifies every delivery
 * with the Standard Webhooks reference library, on PGlite and on Postgres.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.js';
import { attributedSale, buildWebhookApp, deliveryRows, eventually, startInProcessWebhooks, type InProcessWebhooks } from '../../support/webhooks.js';

describe.each(databaseKinds())('outgoing webhooks on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  const running: { stop(): Promise<void> }[] = [];
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildWebhookApp(t.db, { allowPrivateUrls: true });
  }, 120_000);
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    for (const r of receivers.splice(0)) await r.close();
    await t.db.many(sql('test.webhooks_reset', `DELETE FROM webhook_endpoints`));
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const owner = (p: TestProgram) => ({ authorization: `Bearer ${p.workspace.ownerToken}` });
  async function endpoint(program: TestProgram, url: string, events = ['sale.recorded', 'commission.created', 'lead.created', 'sale.refunded', 'commission.reversed']) {
    const res = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints`, headers: owner(program), payload: { url, events } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { id: string; secret: string };
  }
  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  const pipeline = (o: Parameters<typeof startInProcessWebhooks>[1] = { allowPrivate: true }): InProcessWebhooks => {
    const p = startInProcessWebhooks(t.db, o);
    running.push(p);
    return p;
  };

  it('delivers a lead, a sale and its commission, signed, and a refund with its reversal', async () => {
    const program = await createTestProgram(app, t.db);
    const r = await receiver();
    const ep = await endpoint(program, r.url);
    const p = pipeline();
    const { saleId, transactionId } = await attributedSale(app, program, `a-${kind}-${Date.now()}`);
    const refund = await app.inject({ method: 'POST', url: '/api/v1/track/refund', headers: { authorization: `Bearer ${program.apiKey}` }, payload: { transaction_id: transactionId, reason: 'refund' } });
    expect(refund.statusCode).toBe(200);
    await p.relay();
    await eventually(() => r.received.length, (n) => n >= 5);
    const got = r.verified(ep.secret);
    expect(got.map((g) => g.type).sort()).toEqual(['commission.created', 'commission.reversed', 'lead.created', 'sale.recorded', 'sale.refunded']);
    const sale = got.find((g) => g.type === 'sale.recorded')!.body;
    expect(sale).toMatchObject({ type: 'sale.recorded', program_id: program.programId, data: { sale_id: saleId, transaction_id: transactionId, amount_cents: 10_000, currency: 'USD', test: false } });
    expect(Object.keys(sale).sort()).toEqual(['created_at', 'data', 'id', 'program_id', 'type']);
    expect(got.find((g) => g.type === 'commission.created')!.body).toMatchObject({ data: { sale_id: saleId, partner_id: program.partnerId, amount_cents: 1_000, currency: 'USD' } });
    // The webhook id is the event's id, the body's id, and the headers carry Standard Webhooks' three.
    for (const g of got) expect(g.body.id).toBe(g.id);
    expect(r.received[0]!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    await eventually(() => deliveryRows(t.db), (rows) => rows.length === 5 && rows.every((d) => d.status === 'delivered'));
    // Relaying again (a crash before the mark) makes no second delivery.
    await t.db.many(sql('test.unmark', `UPDATE outbox SET relayed_at = NULL`));
    await p.relay();
    expect(await deliveryRows(t.db)).toHaveLength(5);
  });

  it('sends a paid payout as payout.paid and one commission.paid per commission, once each however often the log repeats it', async () => {
    const program = await createTestProgram(app, t.db);
    const base = `/api/tracking/programs/${program.programId}`;
    const post = async (url: string, payload: object = {}) => {
      const res = await app.inject({ method: 'POST', url: `${base}${url}`, headers: owner(program), payload });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data;
    };
    const settings = await app.inject({ method: 'PATCH', url: `${base}/payout-settings`, headers: owner(program), payload: { payout_minimum_minor: 100 } });
    expect(settings.statusCode, settings.body).toBe(200);
    const r = await receiver();
    const ep = await endpoint(program, r.url, ['commission.paid', 'payout.paid']);
    const p = pipeline();
    for (const i of [1, 2]) await attributedSale(app, program, `p${i}-${kind}-${Date.now()}`);
    // The holds end now, as time passing would: both commissions approved, payable.
    await t.db.many(sql('test.webhooks_end_holds', `UPDATE commissions SET available_at = now() - interval '1 second' WHERE program_id = $1`), [program.programId]);
    const [payout] = (await post('/payouts')).payouts;
    await post(`/payouts/${payout.id}/mark-paid`, { reference: 'WISE-1' });
    await p.relay();
    await eventually(() => r.received.length, (n) => n >= 3);
    const got = r.verified(ep.secret);
    expect(got.map((g) => g.type).sort()).toEqual(['commission.paid', 'commission.paid', 'payout.paid']);
    type Body = { id: string; created_at: string; data: { commission_ids: string[]; commission_id: string; paid_at: string } };
    const paid = got.find((g) => g.type === 'payout.paid')!.body as Body;
    const commissionIds = (await t.db.many<{ id: string }>(sql('test.webhooks_commissions', `SELECT id::text FROM commissions WHERE program_id = $1`), [program.programId])).map((c) => c.id);
    expect([...paid.data.commission_ids].sort()).toEqual(commissionIds.sort());
    const commissionPaid = got.filter((g) => g.type === 'commission.paid');
    expect(commissionPaid.map((g) => (g.body as Body).data.commission_id).sort()).toEqual(commissionIds.sort());
    for (const g of commissionPaid) {
      expect(g.body).toMatchObject({ program_id: program.programId, created_at: paid.created_at, data: { payout_id: payout.id, partner_id: program.partnerId, currency: 'USD', paid_at: paid.data.paid_at, test: false } });
      expect(g.body.id).toBe(g.id);
    }
    // Three webhook ids: the event's own for payout.paid, one of each commission beside it.
    expect(paid.id).toBe(got.find((g) => g.type === 'payout.paid')!.id);
    expect(new Set(got.map((g) => g.id)).size).toBe(3);
    await eventually(() => deliveryRows(t.db), (rows) => rows.length === 3 && rows.every((d) => d.status === 'delivered'));
    // The log hands payout.paid over again (a relay crash before its mark, a Kafka redelivery): no second delivery of any.
    await t.db.many(sql('test.unmark', `UPDATE outbox SET relayed_at = NULL`));
    await p.relay();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await deliveryRows(t.db)).toHaveLength(3);
    expect(r.received).toHaveLength(3);
  });

  it('sends only the types an endpoint asked for, to each of several endpoints', async () => {
    const program = await createTestProgram(app, t.db);
    const [a, b] = [await receiver(), await receiver()];
    const epA = await endpoint(program, a.url, ['sale.recorded']);
    const epB = await endpoint(program, b.url, ['commission.created']);
    const p = pipeline();
    await attributedSale(app, program, `f-${kind}-${Date.now()}`);
    await p.relay();
    await eventually(() => a.received.length + b.received.length, (n) => n >= 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(a.verified(epA.secret).map((g) => g.type)).toEqual(['sale.recorded']);
    expect(b.verified(epB.secret).map((g) => g.type)).toEqual(['commission.created']);
  });

  it('retries a receiver that is down with backoff, logs each attempt, and delivers once it is back', async () => {
    const program = await createTestProgram(app, t.db);
    const r = await receiver();
    const ep = await endpoint(program, r.url, ['sale.recorded']);
    r.behaviour.status = 503;
    r.behaviour.body = 'down for maintenance';
    const p = pipeline({ allowPrivate: true, random: () => 0 });
    await attributedSale(app, program, `d-${kind}-${Date.now()}`);
    await p.relay();
    await eventually(() => r.received.length, (n) => n >= 1);
    const [failed] = await eventually(() => deliveryRows(t.db), (rows) => rows[0]?.attempts === 1);
    expect(failed).toMatchObject({ status: 'pending' });
    r.behaviour.status = 200;
    // The first retry comes 5 s later (4.5 s with the jitter drawn at its lowest).
    await eventually(() => deliveryRows(t.db), (rows) => rows[0]?.status === 'delivered', 10_000);
    expect(r.received).toHaveLength(2);
    expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(1);
    expect(r.received[1]!.at - r.received[0]!.at).toBeGreaterThanOrEqual(4_400);
    const log = await app.inject({ method: 'GET', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}/deliveries`, headers: { authorization: `Bearer ${program.workspace.memberToken}` } });
    expect(log.statusCode).toBe(200);
    const attempts = log.json().data[0].attempts;
    expect(attempts.map((a: { status_code: number }) => a.status_code)).toEqual([503, 200]);
    expect(attempts[0].response_body).toBe('down for maintenance');
    expect(attempts[0].duration_ms).toBeGreaterThanOrEqual(0);
  }, 30_000);

  it('redelivers on demand with the same webhook-id; a rotation signs with both secrets for a while', async () => {
    const program = await createTestProgram(app, t.db);
    const r = await receiver();
    const ep = await endpoint(program, r.url, ['sale.recorded']);
    const p = pipeline();
    await attributedSale(app, program, `r-${kind}-${Date.now()}`);
    await p.relay();
    await eventually(() => r.received.length, (n) => n >= 1);
    const rotated = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}/rotate-secret`, headers: owner(program) });
    expect(rotated.statusCode).toBe(200);
    const newSecret = rotated.json().data.secret as string;
    expect(newSecret).toMatch(/^whsec_[A-Za-z0-9]{44}$/);
    expect(newSecret).not.toBe(ep.secret);
    const [delivery] = await eventually(() => deliveryRows(t.db), (rows) => rows[0]?.status === 'delivered');
    const again = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}/deliveries/${delivery!.id}/redeliver`, headers: owner(program) });
    expect(again.statusCode, again.body).toBe(202);
    await eventually(() => r.received.length, (n) => n >= 2);
    const second = r.received[1]!;
    expect(second.headers['webhook-id']).toBe(r.received[0]!.headers['webhook-id']);
    expect(String(second.headers['webhook-signature']).split(' ')).toHaveLength(2);
    // A receiver holding either secret verifies it.
    expect(() => r.verified(newSecret)).toThrow(); // the first delivery predates the new secret
    const { verify } = await import('../../support/webhook-receiver.js');
    expect(verify(newSecret, second).type).toBe('sale.recorded');
    expect(verify(ep.secret, second).type).toBe('sale.recorded');
  });

  it('sends a test ping through the same path, whatever the filter', async () => {
    const program = await createTestProgram(app, t.db);
    const r = await receiver();
    const ep = await endpoint(program, r.url, ['payout.paid']);
    pipeline();
    const ping = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}/test`, headers: owner(program) });
    expect(ping.statusCode, ping.body).toBe(202);
    await eventually(() => r.received.length, (n) => n >= 1);
    const [got] = r.verified(ep.secret);
    expect(got).toMatchObject({ type: 'webhook.test', id: ping.json().data.event_id, body: { program_id: program.programId, data: { endpoint_id: ep.id } } });
  });

  it('one slow receiver does not delay another endpoint', async () => {
    const program = await createTestProgram(app, t.db);
    const [slow, fast] = [await receiver(), await receiver()];
    slow.behaviour.delayMs = 1_500;
    const epSlow = await endpoint(program, slow.url, ['sale.recorded']);
    const epFast = await endpoint(program, fast.url, ['sale.recorded']);
    const p = pipeline({ allowPrivate: true, perEndpoint: 2, timeoutMs: 5_000 });
    for (let i = 0; i < 12; i += 1) await attributedSale(app, program, `s-${kind}-${Date.now()}-${i}`);
    const started = Date.now();
    await p.relay();
    await eventually(() => fast.received.length, (n) => n >= 12, 5_000);
    // All twelve reached the fast receiver while the slow one had at most its two in flight, once or twice.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(slow.received.length).toBeLessThanOrEqual(4);
    expect(fast.verified(epFast.secret)).toHaveLength(12);
    void epSlow;
  }, 30_000);

  it('disables an endpoint that failed for 5 days, fails what it had pending, and the status shows it', async () => {
    const program = await createTestProgram(app, t.db);
    const r = await receiver();
    r.behaviour.status = 500;
    const ep = await endpoint(program, r.url, ['sale.recorded', 'commission.created']);
    await t.db.many(sql('test.failing_long', `UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`), [ep.id]);
    const p = pipeline();
    await attributedSale(app, program, `x-${kind}-${Date.now()}`);
    await p.relay();
    const got = await eventually(
      async () => (await app.inject({ method: 'GET', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}`, headers: owner(program) })).json().data,
      (e) => e.status === 'disabled',
    );
    expect(got).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
    expect((await deliveryRows(t.db)).map((d) => d.status)).not.toContain('pending');
    const status = await app.inject({ method: 'GET', url: `/api/tracking/status/${program.programId}`, headers: owner(program) });
    expect(status.json().data.webhooks).toEqual({ endpoints: 1, enabled: 0, disabled_failing: 1, disabled_manual: 0, failing: 0 });
    // Redelivering to it is refused until a brand enables it again.
    const [d] = await deliveryRows(t.db);
    const refused = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}/deliveries/${d!.id}/redeliver`, headers: owner(program) });
    expect(refused.statusCode).toBe(409);
    const enabled = await app.inject({ method: 'PATCH', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${ep.id}`, headers: owner(program), payload: { enabled: true } });
    expect(enabled.json().data).toMatchObject({ status: 'enabled', disabled_reason: null, failing_since: null });
  });
});
