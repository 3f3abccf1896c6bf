/**
 * Issue 30, point 5: totals in the reporting currency, through the real pipeline (the relay, the
 * loading log and the loader into chDB, and into the ClickHouse server when CLICKHOUSE_TEST_URL is
 * set). EUR and VND sales are converted in the dashboard's totals with the latest rate on or
 * before their day; a sale with no rate is listed as unconverted, never summed; a rate loaded
 * later converts the earlier sales without anything recomputed; the workspace's own rates win
 * over the operator's; the agent answers the same; one partner's totals (the portal's) agree.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAgentKey, parseScopes } from '../../domain/access/agent-keys.js';
import { importFxRates, OPERATOR_RATES } from '../../domain/fx/rates.js';
import { dayOf } from '../../queries/periods.js';
import { reportingTotals, totalsOf } from '../../queries/reporting-totals.js';
import { buildTestApp, createTestProgram, type TestProgram } from '../support/app.js';
import { createTestDatabase, databaseKinds, type DatabaseKind, type TestDatabase } from '../support/databases.js';
import { sale } from '../support/money.js';
import { embeddedDelivery, type Deliver } from '../support/oracle.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse } from '../support/warehouses.js';

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const today = daysAgo(0);

/** chDB with PGlite, the ClickHouse server (when set) with Postgres (when set): both stores of each side run. */
const pairs: [string, DatabaseKind][] = warehouseKinds().map((w, i) => [w, databaseKinds()[i % databaseKinds().length]!]);

describe.each(pairs)('totals in the reporting currency (%s warehouse, %s)', (kind, database) => {
  let t: TestDatabase;
  let w: TestWarehouse;
  let app: FastifyInstance;
  let p: TestProgram;
  let deliver: Deliver;

  const performance = async () => {
    const res = await app.inject({
      method: 'GET',
      url: `/api/tracking/performance/${p.programId}?period=7d`,
      headers: { authorization: `Bearer ${p.workspace.memberToken}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    t = await createTestDatabase(database);
    w = await createTestWarehouse(kind as 'chdb' | 'http');
    await w.stopMerges();
    app = await buildTestApp(t.db, undefined, undefined, w.warehouse);
    deliver = embeddedDelivery(w.warehouse);
    p = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
    // The operator's rates: USD only (1 EUR = 1.25 USD two days ago; 1.5 USD a week ago, too old to be used).
    const operator = await importFxRates(t.db, OPERATOR_RATES, `Date,USD,\n${daysAgo(7)},1.5,\n${daysAgo(2)},1.25,\n`, today);
    expect(operator.ok).toBe(true);
    await sale(app, p, 10_000, 'EUR'); // 100.00 EUR, commission 10.00 EUR
    await sale(app, p, 2_700_000, 'VND'); // 27,000.00 VND, commission 2,700.00 VND
    await sale(app, p, 500, 'USD'); // 5.00 USD, commission 0.50 USD
    await deliver(t.db);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await w?.drop();
  });

  it('EUR is converted with the latest rate on or before its day; VND, with no rate, is listed apart and never summed', async () => {
    const body = await performance();
    // The contract's own fields keep their meaning: USD figures, other currencies beside them.
    expect(body.meta.currency).toBe('USD');
    expect(body.metrics.totalRevenue).toBe(5);
    expect(body.meta.otherCurrencies).toEqual([
      { currency: 'EUR', revenue: 100, commission: 10 },
      { currency: 'VND', revenue: 27_000, commission: 2_700 },
    ]);
    expect(body.reporting).toMatchObject({
      reporting_currency: 'USD',
      sales: 2,
      revenue_minor: 500 + 12_500,
      revenue: 130,
      commissions: 2,
      commission_minor: 50 + 1_250,
      commission: 13,
      unconverted: [{ currency: 'VND', sales: 1, revenue_minor: 2_700_000, revenue: 27_000, commissions: 1, commission_minor: 270_000, commission: 2_700 }],
    });
    expect(body.reporting.fx).toEqual({ reporting_currency: 'USD', rates: [{ currency: 'EUR', day: today, rate: 1.25, rate_date: daysAgo(2) }] });
  });

  it('a VND rate loaded later (for an earlier day) converts the earlier sales; the workspace’s own USD rate wins over the operator’s', async () => {
    const own = await importFxRates(t.db, p.workspace.workspaceId, `Date,VND,USD\n${daysAgo(3)},27000,N/A\n${daysAgo(1)},N/A,1.2\n`, today);
    expect(own.ok).toBe(true);
    // Only the new rates' events travel: no sale, no rollup hour is recomputed.
    await deliver(t.db);
    const body = await performance();
    // EUR at the workspace's 1.2 (1 day ago) instead of the operator's 1.25; VND at 1.2 / 27000.
    expect(body.reporting).toMatchObject({
      sales: 3,
      revenue_minor: 500 + 12_000 + 120,
      commissions: 3,
      commission_minor: 50 + 1_200 + 12,
      unconverted: [],
    });
    expect(body.reporting.fx.rates).toEqual([
      { currency: 'EUR', day: today, rate: 1.2, rate_date: daysAgo(1) },
      { currency: 'VND', day: today, rate: Number((1.2 / 27_000).toPrecision(10)), rate_date: daysAgo(3) },
    ]);
  });

  it('in EUR: USD and VND converted, EUR as is; the agent answers the same totals', async () => {
    const patch = await app.inject({
      method: 'PATCH',
      url: `/api/tracking/programs/${p.programId}`,
      headers: { authorization: `Bearer ${p.workspace.ownerToken}` },
      payload: { reporting_currency: 'EUR' },
    });
    expect(patch.statusCode, patch.body).toBe(200);
    const body = await performance();
    // 5.00 USD / 1.2 = 4.17 EUR; 27,000 VND / 27000 = 1.00 EUR.
    expect(body.reporting).toMatchObject({ reporting_currency: 'EUR', revenue_minor: 10_000 + 417 + 100, commission_minor: 1_000 + 42 + 10, unconverted: [] });
    const { agentKey } = await issueAgentKey(t.db, p.workspace.workspaceId, 'fx test', parseScopes('all'));
    const agent = await app.inject({
      method: 'GET',
      url: `/api/agent/v1/programs/${p.programId}/performance?period=7d`,
      headers: { authorization: `Bearer ${agentKey}` },
    });
    expect(agent.statusCode, agent.body).toBe(200);
    expect(agent.json().reporting).toEqual(body.reporting);
    const summary = await app.inject({
      method: 'GET',
      url: `/api/agent/v1/programs/${p.programId}/summary?period=7d`,
      headers: { authorization: `Bearer ${agentKey}` },
    });
    expect(summary.statusCode, summary.body).toBe(200);
    expect(summary.json().data.reporting).toEqual(body.reporting);
  });

  it('one partner’s totals (what the portal reads) agree with the program’s when the partner made every sale', async () => {
    const request = { programId: p.programId, workspaceId: p.workspace.workspaceId, reportingCurrency: 'EUR', first: dayOf(Date.now()) - 6, last: dayOf(Date.now()) };
    const program = await reportingTotals(w.warehouse, request);
    const partner = await reportingTotals(w.warehouse, { ...request, partnerId: p.partnerId });
    expect(partner).toEqual(program);
    expect(partner.revenue_minor).toBe(10_517);
    const stranger = await reportingTotals(w.warehouse, { ...request, partnerId: p.partnerId + 1_000 });
    expect(stranger).toMatchObject({ sales: 0, revenue_minor: 0, unconverted: [], fx: { rates: [] } });
  });
});

describe('converting: the pure part', () => {
  const day = dayOf(Date.parse('2026-11-26T00:00:00Z'));
  const request = { programId: 1, workspaceId: 7, reportingCurrency: 'USD', first: day - 1, last: day };
  const sales = (currency: string, cents: number, on = day) => ({ metric: 'sales' as const, day: on, currency, n: 1, cents });
  const rate = (currency: string, rateDay: string, perEur: string, workspace = 0) => ({ workspace_id: workspace, rate_currency: currency, rate_day: rateDay, per_eur: perEur });

  it('rounds each converted amount half away from zero, exactly, and never sums an amount without a rate', () => {
    const t = totalsOf(
      [sales('EUR', 1), sales('EUR', 50, day - 1), sales('JPY', 1000), sales('GBP', 77), sales('USD', 5), sales('EUR', 999, day - 2)],
      [rate('USD', '2026-11-26', '1.005'), rate('USD', '2026-11-24', '1.01'), rate('GBP', '2026-11-20', '0.85')],
      request,
    );
    // 1 * 1.005 -> 1; 50 * 1.01 (the day before has none: the 24th's rate) = 50.5 -> 51; GBP: 77 * 1.005 / 0.85 = 91.04 -> 91; USD as is.
    // The EUR figure of the day before the range is not counted.
    expect(t.revenue_minor).toBe(1 + 51 + 91 + 5);
    expect(t.sales).toBe(4);
    expect(t.unconverted).toEqual([{ currency: 'JPY', sales: 1, revenue_minor: 1000, revenue: 10, commissions: 0, commission_minor: 0, commission: 0 }]);
    expect(t.fx.rates).toEqual([
      { currency: 'EUR', day: '2026-11-25', rate: 1.01, rate_date: '2026-11-24' },
      { currency: 'EUR', day: '2026-11-26', rate: 1.005, rate_date: '2026-11-26' },
      { currency: 'GBP', day: '2026-11-26', rate: Number((1.005 / 0.85).toPrecision(10)), rate_date: '2026-11-20' },
    ]);
  });

  it('the workspace’s own rate wins over the operator’s on the same day; an older own rate does not', () => {
    const t = totalsOf([sales('EUR', 10_000)], [rate('USD', '2026-11-26', '1.1'), rate('USD', '2026-11-26', '1.2', 7), rate('USD', '2026-11-25', '1.3', 7)], request);
    expect(t.revenue_minor).toBe(12_000);
    const older = totalsOf([sales('EUR', 10_000)], [rate('USD', '2026-11-26', '1.1'), rate('USD', '2026-11-25', '1.3', 7)], request);
    expect(older.revenue_minor).toBe(11_000);
  });
});
