/**
 * The partner list's totals from the warehouse (queries/partners.ts), on chDB: real clicks, paid
 * sales and commissions not reversed per partner, a redelivered event counted once; and the cache
 * that answers the last computation while the next one runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/sql.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { createPartnerTotalsCache, partnerTotals } from '../../queries/partners.js';

const at = '2026-11-02 10:00:00.000000';
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
let token = 0;

describe('partner totals from the warehouse (chDB)', () => {
  let dir: string;
  let warehouse: Warehouse;

  const clicks = (rows: { n: number; partner: number | null; test?: boolean; program?: number }[]) =>
    warehouse.insert(
      'click_recorded',
      rows.map((r) => ({
        event_id: uuid(r.n), program_id: r.program ?? 7, occurred_at: at, test: r.test ?? false, click_id: `click-${r.n}`,
        partner_id: r.partner, referral_link_id: 5, created_at: at,
      })),
      { dedupToken: `partners-test-${++token}` },
    );

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-partner-totals-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    await clicks([{ n: 1, partner: 11 }, { n: 2, partner: 11 }, { n: 3, partner: 11, test: true }, { n: 4, partner: 12 }, { n: 5, partner: 11, program: 8 }]);
    // The same click delivered again in another batch: one click.
    await clicks([{ n: 2, partner: 11 }]);
    const sale = (n: number, partner: number, amount: number, currency: string, extra: Record<string, unknown> = {}) => ({
      program_id: 7, sale_id: uuid(100 + n), transaction_id: `t-${n}`, customer_id: n, partner_id: partner, amount_cents: amount, currency,
      occurred_at: at, is_recurring: false, test: false, recorded_status: 'paid', changed_status: '', status_changed_at: null, ...extra,
    });
    await warehouse.insert(
      'sales_current',
      [sale(1, 11, 5_000, 'USD'), sale(2, 11, 2_000, 'EUR'), sale(3, 11, 9_999, 'USD', { changed_status: 'refunded', status_changed_at: at }), sale(4, 12, 1_000, 'USD', { test: true })],
      { dedupToken: `partners-test-${++token}` },
    );
    const commission = (n: number, partner: number, amount: number, currency: string, status: string, version: number) => ({
      program_id: 7, commission_id: uuid(200 + n), sale_id: uuid(100 + n), partner_id: partner, amount_cents: amount, currency, status,
      created_at: at, reversed_at: status === 'reversed' ? at : null, state_version: version,
    });
    await warehouse.insert(
      'commissions_current',
      [commission(1, 11, 500, 'USD', 'pending', 1), commission(2, 11, 200, 'EUR', 'pending', 1), commission(3, 11, 999, 'USD', 'pending', 1), commission(3, 11, 999, 'USD', 'reversed', 2)],
      { dedupToken: `partners-test-${++token}` },
    );
  });
  afterAll(async () => {
    await warehouse?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('counts real clicks once, paid sales and commissions not reversed, per currency, for the program asked', async () => {
    const totals = await partnerTotals(warehouse, 7);
    expect(Object.fromEntries(totals)).toEqual({
      11: {
        clicks: 2,
        sales: 2,
        revenue: [{ currency: 'EUR', amount_minor: 2_000 }, { currency: 'USD', amount_minor: 5_000 }],
        commission: [{ currency: 'EUR', amount_minor: 200 }, { currency: 'USD', amount_minor: 500 }],
      },
      12: { clicks: 1, sales: 0, revenue: [], commission: [] },
    });
    expect(Object.fromEntries(await partnerTotals(warehouse, 8))).toEqual({ 11: { clicks: 1, sales: 0, revenue: [], commission: [] } });
  });

  it('the cache answers its last computation until it is a minute old, then computes again', async () => {
    let clock = 1_000_000;
    const cache = createPartnerTotalsCache(warehouse, { now: () => clock, waitMs: 10_000 });
    const first = await cache.get(7);
    expect(first.asOf).toBe(1_000_000);
    expect(first.totals!.get(11)!.clicks).toBe(2);
    await clicks([{ n: 6, partner: 11 }]);
    clock += 59_000;
    expect((await cache.get(7)).totals!.get(11)!.clicks).toBe(2);
    clock += 2_000;
    const later = await cache.get(7);
    expect(later.asOf).toBe(1_061_000);
    expect(later.totals!.get(11)!.clicks).toBe(3);
    // An old click delivered again, and the table merged: the days read again still count it once.
    await clicks([{ n: 1, partner: 11 }]);
    await warehouse.command(sql('t.partners_optimize', 'OPTIMIZE TABLE click_recorded FINAL'));
    clock += 61_000;
    expect(Object.fromEntries((await cache.get(7)).totals!)).toEqual(Object.fromEntries(await partnerTotals(warehouse, 7)));
    expect((await cache.get(7)).totals!.get(11)!.clicks).toBe(3);
  });

  it('a request does not wait for a long computation: it answers what there is, and the computation lands later', async () => {
    const cache = createPartnerTotalsCache(warehouse, { waitMs: 0 });
    const first = await cache.get(7);
    // Nothing computed yet: the list says "computing"; the next request has them.
    expect(first.totals).toBeUndefined();
    await expect.poll(async () => (await cache.get(7)).totals?.get(11)?.clicks).toBe(3);
  });
});
