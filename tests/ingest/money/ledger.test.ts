/**
 * Issue 34, points 2 and 7 (PGlite and Postgres): the ledger is append-only in the database, balances
 * are its sums (the worked example of docs/decisions/ledger.md), manual adjustments are idempotent,
 * and bad input gets the platform envelope with a clear message and writes nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { databaseKinds } from '../../support/databases.js';
import { entries, moneyCounts, moneyProgram, moneyTestApp, refund, sale, type MoneyProgram } from '../../support/money.js';

describe.each(databaseKinds())('the ledger (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { get, post } = money;
  const approveNow = (ids: string[]) =>
    money.db.many(sql('t.end_hold_of', `UPDATE commissions SET available_at = now() - interval '1 second' WHERE id = ANY ($1::uuid[])`), [ids]);

  it('refuses UPDATE, DELETE and TRUNCATE of ledger entries, whoever asks', async () => {
    const p = await moneyProgram(money.app, money.db);
    await sale(money.app, p, 10_000);
    for (const statement of ['UPDATE ledger_entries SET amount_minor = 1', 'DELETE FROM ledger_entries', 'TRUNCATE ledger_entries']) {
      await expect(money.db.many(sql('t.tamper', statement))).rejects.toThrow(/ledger_entries is append-only/);
    }
    expect(await entries(money.db, p.programId)).toHaveLength(1);
  });

  it('balances are the sums: the worked example', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 30, minimum: 100 });
    const pay = async () => (await post(`${p.base}/payouts`, p.owner)).json().data.payouts as { id: string; amount_minor: number }[];
    const e = await sale(money.app, p, 50_000); // 5,000
    const f = await sale(money.app, p, 6_000); // 600
    await approveNow([e.commissionId, f.commissionId]);
    const [p1] = await pay();
    expect(p1!.amount_minor).toBe(5_600);
    await post(`${p.base}/payouts/${p1!.id}/mark-paid`, p.owner, { reference: 'P1' });
    const d = await sale(money.app, p, 40_000); // 4,000, in a pending payout
    await approveNow([d.commissionId]);
    expect((await pay()).map((x) => x.amount_minor)).toEqual([4_000]);
    await sale(money.app, p, 10_000); // A: 1,000 pending
    const b = await sale(money.app, p, 20_000); // B: 2,000 approved
    const c = await sale(money.app, p, 30_000); // C: 3,000 held
    await approveNow([b.commissionId]);
    await money.db.many(sql('t.held', `UPDATE commissions SET status = 'held' WHERE id = $1`), [c.commissionId]);
    await refund(money.app, p, f.transactionId); // F was paid: clawback -600
    const bonus = await post(`${p.base}/partners/${p.partnerId}/adjustments`, p.owner, { amount_minor: 250, currency: 'USD', reason: 'Launch bonus' });
    expect(bonus.json().data).toMatchObject({ kind: 'manual', amount_minor: 250, reason: 'Launch bonus' });

    const balance = (await get(`${p.base}/partners/${p.partnerId}/balance`, p.member)).json().data;
    expect(balance).toEqual([{ currency: 'USD', pending: 1_000, held: 3_000, approved: 1_650, processing: 4_000, paid: 5_600, balance: 9_650 }]);
    const sum = (await entries(money.db, p.programId)).reduce((s, x) => s + x.amount_minor, 0);
    expect(sum).toBe(9_650);
    expect(balance[0].pending + balance[0].held + balance[0].approved + balance[0].processing).toBe(sum);
  });

  it('reads a partner’s ledger a page at a time', async () => {
    const p = await moneyProgram(money.app, money.db);
    for (let i = 1; i <= 5; i += 1) await sale(money.app, p, i * 10_000);
    const first = (await get(`${p.base}/partners/${p.partnerId}/ledger?limit=2`, p.member)).json();
    expect(first.data.map((x: { amount_minor: number }) => x.amount_minor)).toEqual([1_000, 2_000]);
    expect(first.has_more).toBe(true);
    const rest = (await get(`${p.base}/partners/${p.partnerId}/ledger?limit=10&cursor=${first.next_cursor}`, p.member)).json();
    expect(rest.data.map((x: { amount_minor: number }) => x.amount_minor)).toEqual([3_000, 4_000, 5_000]);
    expect(rest).toMatchObject({ has_more: false, next_cursor: null });
    // The program's terms as first set are its first rule version (issue 30), whose id each commission entry records.
    const [firstVersion] = (await get(`${p.base}/commission-rules`, p.member)).json().data;
    expect(firstVersion).toMatchObject({ version: 1 });
    expect(rest.data[0]).toMatchObject({ kind: 'commission', currency: 'USD', payout_id: null, rule_version: firstVersion.id });
  });

  it('a manual adjustment with an Idempotency-Key is written once; the key reused for another request is 409', async () => {
    const p = await moneyProgram(money.app, money.db);
    await sale(money.app, p, 10_000);
    const headers = { ...p.owner, 'idempotency-key': 'adj-42' };
    const body = { amount_minor: -150, currency: 'USD', reason: 'Returned merchandise fee' };
    const first = await post(`${p.base}/partners/${p.partnerId}/adjustments`, headers, body);
    expect(first.json()).toMatchObject({ replayed: false, data: { kind: 'manual', amount_minor: -150, cause: `manual:${p.programId}:${p.partnerId}:adj-42` } });
    const before = await moneyCounts(money.db);
    const again = await post(`${p.base}/partners/${p.partnerId}/adjustments`, headers, body);
    expect(again.json()).toEqual({ ...first.json(), replayed: true });
    const other = await post(`${p.base}/partners/${p.partnerId}/adjustments`, headers, { ...body, amount_minor: -151 });
    expect(other.statusCode).toBe(409);
    expect(other.json().error.message).toBe('This Idempotency-Key was already used for another request');
    expect(await moneyCounts(money.db)).toEqual(before);
    // Without a key every request is its own.
    await post(`${p.base}/partners/${p.partnerId}/adjustments`, p.owner, body);
    await post(`${p.base}/partners/${p.partnerId}/adjustments`, p.owner, body);
    expect((await entries(money.db, p.programId)).filter((x) => x.kind === 'manual')).toHaveLength(3);
  });

  describe('bad input: the platform envelope, a clear message, nothing written', () => {
    let p: MoneyProgram;
    let other: MoneyProgram;
    let commissionId: string;
    let foreignCommission: string;
    let foreignPayout: string;

    beforeAll(async () => {
      p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
      commissionId = (await sale(money.app, p, 10_000)).commissionId;
      other = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
      foreignCommission = (await sale(money.app, other, 10_000)).commissionId;
      foreignPayout = (await post(`${other.base}/payouts`, other.owner)).json().data.payouts[0].id;
    });

    const cases = (): [string, string, string, object | undefined, number, string][] => [
      // Ids of another workspace's program: as unknown as any other.
      ['POST', `${p.base}/commissions/${foreignCommission}/approve`, 'commission', { reason: 'x' }, 404, 'Commission not found in this program'],
      ['POST', `${p.base}/commissions/not-a-uuid/reject`, 'commission', { reason: 'x' }, 404, 'Commission not found in this program'],
      ['POST', `${p.base}/payouts/${foreignPayout}/mark-paid`, 'payout', { reference: 'x' }, 404, 'Payout not found in this program'],
      ['POST', `${p.base}/payouts/${foreignPayout}/cancel`, 'payout', {}, 404, 'Payout not found in this program'],
      ['GET', `${p.base}/payouts/${foreignPayout}`, 'payout', undefined, 404, 'Payout not found in this program'],
      ['POST', `${p.base}/partners/${other.partnerId}/adjustments`, 'partner', { amount_minor: 100, currency: 'USD', reason: 'x' }, 404, 'Partner not found in this program'],
      ['GET', `${p.base}/partners/${other.partnerId}/ledger`, 'partner', undefined, 404, 'Partner not found in this program'],
      ['GET', `${p.base}/partners/${other.partnerId}/balance`, 'partner', undefined, 404, 'Partner not found in this program'],
      ['PUT', `${p.base}/partners/${other.partnerId}/payout-method`, 'partner', { method: 'manual' }, 404, 'Partner not found in this program'],
      ['POST', `${other.base}/payouts`, 'program', {}, 403, 'You are not a member of the workspace that owns this program'],
      // Amounts that are not integers, or zero.
      ...[12.5, '100', 0, null, 1e12].map((amount): [string, string, string, object, number, string] => [
        'POST', `${p.base}/partners/${p.partnerId}/adjustments`, 'amount', { amount_minor: amount, currency: 'USD', reason: 'x' }, 400,
        'amount_minor is required and must be a non-zero integer of at most 100000000000 either way',
      ]),
      ['POST', `${p.base}/partners/${p.partnerId}/adjustments`, 'currency', { amount_minor: 100, currency: 'EUR', reason: 'x' }, 400,
        'The partner has no ledger entries in EUR: a manual adjustment must be in a currency the partner has a balance in'],
      ['POST', `${p.base}/partners/${p.partnerId}/adjustments`, 'currency', { amount_minor: 100, currency: 'GBP', reason: 'x' }, 400, 'currency is required and must be one of: USD, EUR, VND'],
      ['POST', `${p.base}/partners/${p.partnerId}/adjustments`, 'reason', { amount_minor: 100, currency: 'USD' }, 400, 'reason is required and must be a string of 1 to 500 characters'],
      ['POST', `${p.base}/commissions/${commissionId}/approve`, 'reason', { reason: 'x'.repeat(501) }, 400, 'reason is required and must be a string of 1 to 500 characters'],
      // Cutoffs in the future, or not times.
      ['POST', `${p.base}/payouts`, 'cutoff', { cutoff: new Date(Date.now() + 3_600_000).toISOString() }, 400, 'cutoff must not be in the future'],
      ['POST', `${p.base}/payouts`, 'cutoff', { cutoff: 'yesterday' }, 400, 'cutoff must be an ISO 8601 date-time with an offset, such as 2026-01-31T00:00:00Z'],
      ['POST', `${p.base}/payouts`, 'field', { cut_off: '2026-01-01T00:00:00Z' }, 400, 'Unknown field: cut_off'],
      ['GET', `${p.base}/statements/2999-01`, 'period', undefined, 400, 'period must not be after the current month'],
      ['GET', `${p.base}/statements/2026-13`, 'period', undefined, 400, 'period must be a month as YYYY-MM (UTC), such as 2026-01'],
      ['GET', `${p.base}/payouts?status=sent`, 'status', undefined, 400, 'status must be one of: pending, paid, canceled'],
      ['PATCH', `${p.base}/payout-settings`, 'settings', { commission_hold_days: 366 }, 400, 'commission_hold_days must be an integer from 0 to 365'],
      ['PATCH', `${p.base}/payout-settings`, 'settings', {}, 400, 'Send commission_hold_days, payout_minimum_minor or both'],
    ];

    it('each is answered in the platform envelope and changes nothing', async () => {
      const before = await moneyCounts(money.db);
      for (const [method, url, what, payload, status, message] of cases()) {
        const res = await money.app.inject({ method: method as 'GET', url, headers: p.owner, ...(payload ? { payload } : {}) });
        expect(res.statusCode, `${what}: ${method} ${url} ${JSON.stringify(payload)}`).toBe(status);
        expect(res.json(), url).toMatchObject({ data: null, error: { status, message, details: {} } });
      }
      const key = await post(`${p.base}/payouts`, { ...p.owner, 'idempotency-key': 'a b' });
      expect(key.json().error.message).toBe('Idempotency-Key must be 1 to 255 printable characters');
      expect(await moneyCounts(money.db)).toEqual(before);
    });
  });
});
