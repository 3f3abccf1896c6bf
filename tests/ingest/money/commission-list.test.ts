/**
 * Issue 33, point 5: GET .../commissions, the console's commission list, on PGlite and Postgres:
 * newest first, the state every read shows (a hold that ended reads approved, a commission in a
 * pending payout processing), filtered by status and partner, cursor pages that neither skip nor
 * repeat; members read; bad filters, another program's partner and another workspace's program refused.
 */
import { describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { databaseKinds } from '../../support/databases.js';
import { endHolds, moneyProgram, moneyTestApp, sale } from '../../support/money.js';

describe.each(databaseKinds())('the commission list (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { get, post } = money;

  it('newest first, by status and partner, in cursor pages; members read', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30, minimum: 100 });
    const made = [];
    for (const amount of [10_000, 20_000, 30_000, 40_000, 50_000]) made.push(await sale(money.app, p, amount));
    // The first two past their hold (approved as reads show it), then in a payout (processing); the last rejected.
    await endHolds(money.db, p.programId);
    const [a, b, c, d, e] = made.map((m) => m.commissionId) as [string, string, string, string, string];
    await money.db.many(sql('t.commission_list_rehold', `UPDATE commissions SET available_at = now() + interval '30 days' WHERE id = ANY($1::uuid[])`), [[c, d, e]]);
    expect((await post(`${p.base}/commissions/${e}/reject`, p.owner, { reason: 'Test order' })).statusCode).toBe(200);
    const run = await post(`${p.base}/payouts`, p.owner, {});
    expect(run.statusCode).toBe(200);

    const list = async (query: string, who = p.member) => {
      const res = await get(`${p.base}/commissions${query}`, who);
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { data: { id: string; status: string; amount_minor: number; partner_id: number; partner_name: string | null }[]; has_more: boolean; next_cursor: string | null };
    };
    const all = await list('');
    expect(all.data.map((x) => x.id)).toEqual([e, d, c, b, a]);
    expect(all.data.map((x) => x.status)).toEqual(['reversed', 'pending', 'pending', 'processing', 'processing']);
    expect(all.has_more).toBe(false);
    // Each one as the single read shows it, with its partner's name.
    for (const { partner_name, ...x } of all.data) {
      expect(partner_name).toBe('Partner');
      expect(x).toEqual((await get(`${p.base}/commissions/${x.id}`, p.owner)).json().data);
    }

    expect((await list('?status=pending')).data.map((x) => x.id)).toEqual([d, c]);
    expect((await list('?status=reversed')).data.map((x) => x.id)).toEqual([e]);
    expect((await list('?status=processing')).data.map((x) => x.id)).toEqual([b, a]);
    expect((await list('?status=approved')).data).toEqual([]);
    expect((await list(`?partner_id=${p.partnerId}&status=pending`)).data.map((x) => x.id)).toEqual([d, c]);

    // Pages of two: every commission once, in order.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((x) => x.id));
      cursor = page.next_cursor;
      expect(page.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([e, d, c, b, a]);
  });

  it('refuses bad filters (400), a partner of no program of its own (404), another workspace (403), no session (401)', async () => {
    const p = await moneyProgram(money.app, money.db);
    const other = await moneyProgram(money.app, money.db);
    await sale(money.app, p, 10_000);
    const status = async (query: string, who: Record<string, string> = p.owner, base = p.base) => {
      const res = await get(`${base}/commissions${query}`, who);
      if (res.statusCode !== 200) expect(res.json().error.message, query).toEqual(expect.any(String));
      return res.statusCode;
    };
    expect(await status('?status=lost')).toBe(400);
    expect(await status('?partner_id=abc')).toBe(400);
    expect(await status('?limit=500')).toBe(400);
    expect(await status('?cursor=nonsense!')).toBe(400);
    expect(await status('?sort=amount')).toBe(400);
    expect(await status(`?partner_id=${other.partnerId}`)).toBe(404);
    expect(await status('', other.owner)).toBe(403);
    expect(await status('', {})).toBe(401);
    expect((await get(`${other.base}/commissions`, other.member)).json().data).toEqual([]);
  });
});
