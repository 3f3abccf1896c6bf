import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

describe.each(databaseKinds())('concurrent identical sales on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind, 60);
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db, { commission_type: 'recurring_percent', commission_rate: 10 });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('50 parallel identical sales: one 200, 49 409s, one sale and one commission', async () => {
    const click = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
    });
    const clickId = click.json().click_id;
    await app.inject({
      method: 'POST',
      url: '/api/v1/track/lead',
      headers: { authorization: `Bearer ${program.apiKey}`, 'x-forwarded-for': freshIp() },
      payload: { click_id: clickId, customer_key: 'racer' },
    });
    const payload = { transaction_id: `race-${Date.now()}`, amount_cents: 4_200, customer_key: 'racer' };
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        app.inject({ method: 'POST', url: '/api/v1/track/sale', headers: { authorization: `Bearer ${program.apiKey}` }, payload }),
      ),
    );
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);
    const saleId = responses.find((r) => r.statusCode === 200)!.json().data.sale_id;
    for (const r of responses.filter((x) => x.statusCode === 409)) expect(r.json().error.details.sale_id).toBe(saleId);
    const counts = await t.db.one<{ sales: number; commissions: number; fees: number }>(
      sql(
        't.race_counts',
        `SELECT (SELECT count(*) FROM sale_events WHERE transaction_id = $1) AS sales,
                (SELECT count(*) FROM commissions c JOIN sale_events s ON s.id = c.sale_id WHERE s.transaction_id = $1) AS commissions,
                (SELECT count(*) FROM platform_fees f JOIN sale_events s ON s.id = f.sale_id WHERE s.transaction_id = $1) AS fees`,
      ),
      [payload.transaction_id],
    );
    expect(counts).toEqual({ sales: 1, commissions: 1, fees: 1 });
  });

  it('parallel first sales of one customer convert it once', async () => {
    const click = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
    });
    const clickId = click.json().click_id;
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/track/sale',
          headers: { authorization: `Bearer ${program.apiKey}` },
          payload: { transaction_id: `para-${Date.now()}-${i}`, amount_cents: 100, click_id: clickId },
        }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
    expect(responses.filter((r) => r.json().data.conversion)).toHaveLength(1);
    const customers = await t.db.many(sql('t.race_customers', `SELECT 1 FROM customers WHERE click_id = $1`), [clickId]);
    expect(customers).toHaveLength(1);
  });
});
