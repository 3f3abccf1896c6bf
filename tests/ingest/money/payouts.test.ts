/**
 * Issue 34, point 3: payouts (PGlite and Postgres): cutoff and minimum, clawbacks netted,
 * concurrency (20 creations at once never cover a commission twice), identical retries, mark-paid
 * and cancel with their 409s, and the three export formats with each partner's payout method.
 */
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import type { TestProgram } from '../../support/app.js';
import { databaseKinds } from '../../support/databases.js';
import { commissionOf, entries, eventsOf, moneyCounts, moneyProgram, moneyTestApp, refund, sale, type MoneyProgram } from '../../support/money.js';

describe.each(databaseKinds())('payouts (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { get, post } = money;

  /** Another partner of the program, with its own link: a program view whose sales go to it. */
  async function partner(p: MoneyProgram, name: string): Promise<TestProgram> {
    const res = await post(`${p.base}/partners`, p.owner, { name, email: `${name.toLowerCase()}@partners.test.example` });
    expect(res.statusCode).toBe(200);
    return { ...p, partnerId: res.json().data.partner_id, affCode: res.json().data.aff_code };
  }

  it('pays partners whose approved balance reaches the minimum, as of the cutoff; the rest waits', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 2_500 });
    const big = await sale(money.app, p, 30_000); // 3,000
    const small = await partner(p, 'Small');
    await sale(money.app, small, 10_000); // 1,000: under the minimum
    const late = await partner(p, 'Late');
    const old = await sale(money.app, late, 40_000);
    // Approved a minute ago, and a second after the cutoff (sooner than now).
    const cutoff = new Date(Date.now() - 30_000).toISOString();
    const approvedAt = sql('t.approved_at', `UPDATE commissions SET approved_at = $2::timestamptz WHERE id = $1`);
    await money.db.many(approvedAt, [big.commissionId, new Date(Date.now() - 60_000).toISOString()]);
    await money.db.many(approvedAt, [old.commissionId, new Date(Date.parse(cutoff) + 1_000).toISOString()]);
    const run = await post(`${p.base}/payouts`, p.owner, { cutoff });
    expect(run.statusCode).toBe(200);
    const payouts = run.json().data.payouts;
    expect(payouts).toEqual([
      expect.objectContaining({ partner_id: p.partnerId, currency: 'USD', amount_minor: 3_000, status: 'pending', commission_ids: [big.commissionId], cutoff, paid_at: null, reference: null }),
    ]);
    expect((await commissionOf(money.db, big.transactionId)).status).toBe('processing');
    expect((await eventsOf(money.db, p.programId, 'payout.created'))[0]).toMatchObject({ payout_id: payouts[0].id, amount_minor: 3_000, commission_ids: [big.commissionId] });
    // None is not an error.
    expect((await post(`${p.base}/payouts`, p.owner)).json().data.payouts).toEqual([
      expect.objectContaining({ partner_id: late.partnerId, amount_minor: 4_000 }),
    ]);
    expect((await post(`${p.base}/payouts`, p.owner)).json().data.payouts).toEqual([]);
  });

  it('20 creations at once never cover a commission twice; an Idempotency-Key retry answers the first run', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const partners = [p as TestProgram, ...(await Promise.all(['A', 'B', 'C', 'D'].map((n) => partner(p, `Partner${n}`))))];
    const made: string[] = [];
    for (const who of partners) for (let i = 0; i < 3; i += 1) made.push((await sale(money.app, who, 10_000 + i * 1_000)).commissionId);

    const answers = await Promise.all(Array.from({ length: 20 }, () => post(`${p.base}/payouts`, p.owner)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200));
    const payouts = answers.flatMap((a) => a.json().data.payouts as { partner_id: number; commission_ids: string[]; amount_minor: number }[]);
    expect(payouts).toHaveLength(partners.length);
    const covered = payouts.flatMap((x) => x.commission_ids);
    expect(covered.sort()).toEqual([...made].sort());
    expect(new Set(payouts.map((x) => x.partner_id)).size).toBe(partners.length);
    expect(payouts.reduce((sum, x) => sum + x.amount_minor, 0)).toBe(partners.length * (1_000 + 1_100 + 1_200));
    const stored = await money.db.one<{ n: number }>(sql('t.payout_count', `SELECT count(*)::int AS n FROM payouts WHERE program_id = $1`), [p.programId]);
    expect(stored!.n).toBe(partners.length);

    // An identical retry with its key: the same run, nothing new.
    await sale(money.app, p, 50_000);
    const headers = { ...p.owner, 'idempotency-key': 'run-2026-01' };
    const first = (await post(`${p.base}/payouts`, headers)).json().data;
    const before = await moneyCounts(money.db);
    const retry = (await post(`${p.base}/payouts`, headers)).json().data;
    expect(retry).toMatchObject({ run_id: first.run_id, replayed: true });
    expect(retry.payouts).toEqual(first.payouts);
    expect(await moneyCounts(money.db)).toEqual(before);
  });

  // A refund, a partial refund or an owner's decision locks the commission row, then takes the payout
  // lock shared: mark-paid takes its commissions' rows before the payout lock, so the two only wait.
  it.runIf(kind === 'postgres')('mark-paid waits for a refund that holds one of its commissions, and neither deadlocks', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const made = await sale(money.app, p, 10_000);
    const payout = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts[0];
    let markPaid: ReturnType<typeof post> | undefined;
    await money.db.transaction(async (tx) => {
      await tx.many(sql('t.lock_commission', `SELECT id FROM commissions WHERE id = $1::uuid FOR UPDATE`), [made.commissionId]);
      markPaid = post(`${p.base}/payouts/${payout.id}/mark-paid`, p.owner, { reference: 'R-1' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await tx.many(sql('t.lock_payouts_shared', `SELECT lock_payouts($1, true)`), [p.programId]);
    });
    const answer = await markPaid!;
    expect(answer.statusCode).toBe(200);
    expect(answer.json().data.status).toBe('paid');
    expect((await commissionOf(money.db, made.transactionId)).status).toBe('paid');
  });

  it('refunds racing a payout run: each refunded commission is either reversed and in no payout, or in the payout and clawed back', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const sales = [];
    for (let i = 0; i < 24; i += 1) sales.push(await sale(money.app, p, 10_000 + i * 100));
    const refunded = sales.filter((_, i) => i % 2 === 0);
    const [run] = await Promise.all([post(`${p.base}/payouts`, p.owner), ...refunded.map((s) => refund(money.app, p, s.transactionId))]);
    const payouts = run.json().data.payouts as { commission_ids: string[]; amount_minor: number }[];
    const covered = new Set(payouts.flatMap((x) => x.commission_ids));
    const ledger = await entries(money.db, p.programId);
    for (const s of refunded) {
      const kinds = ledger.filter((e) => e.commission_id === s.commissionId).map((e) => e.kind);
      const state = (await commissionOf(money.db, s.transactionId)).status;
      if (covered.has(s.commissionId)) {
        expect([state, kinds]).toEqual(['processing', ['commission', 'clawback']]);
      } else {
        expect([state, kinds]).toEqual(['reversed', ['commission', 'reversal']]);
      }
    }
    // Each payout pays exactly the commissions it names.
    const amounts = new Map(await Promise.all(sales.map(async (s) => [s.commissionId, (await commissionOf(money.db, s.transactionId)).amount_cents] as const)));
    for (const x of payouts) expect(x.amount_minor).toBe(x.commission_ids.reduce((n, id) => n + amounts.get(id)!, 0));
  });

  it('mark-paid writes the payout entry and pays the commissions; cancel puts them back; repeated moves are 409', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const a = await sale(money.app, p, 20_000);
    const [payout] = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts;
    const noRef = await post(`${p.base}/payouts/${payout.id}/mark-paid`, p.owner, {});
    expect(noRef.statusCode).toBe(400);
    expect(noRef.json().error.message).toBe('reference is required and must be a string of 1 to 200 characters');
    const paid = await post(`${p.base}/payouts/${payout.id}/mark-paid`, p.owner, { reference: 'PAYPAL-BATCH-7' });
    expect(paid.json().data).toMatchObject({ status: 'paid', reference: 'PAYPAL-BATCH-7' });
    expect((await commissionOf(money.db, a.transactionId)).status).toBe('paid');
    expect((await entries(money.db, p.programId)).at(-1)).toMatchObject({ kind: 'payout', amount_minor: -2_000, cause: `payout:${payout.id}` });
    for (const action of ['mark-paid', 'cancel']) {
      const res = await post(`${p.base}/payouts/${payout.id}/${action}`, p.owner, action === 'mark-paid' ? { reference: 'again' } : {});
      expect(res.statusCode).toBe(409);
      expect(res.json().error.message).toBe('This payout is paid, not pending: it can no longer be marked paid or canceled');
    }

    const b = await sale(money.app, p, 30_000);
    const [second] = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts;
    const canceled = await post(`${p.base}/payouts/${second.id}/cancel`, p.owner);
    expect(canceled.json().data).toMatchObject({ status: 'canceled' });
    expect(await commissionOf(money.db, b.transactionId)).toMatchObject({ status: 'approved', payout_id: null });
    expect((await post(`${p.base}/payouts/${second.id}/cancel`, p.owner)).statusCode).toBe(409);
    expect((await post(`${p.base}/payouts/${second.id}/mark-paid`, p.owner, { reference: 'x' })).statusCode).toBe(409);
    // Covered again by the next run.
    expect((await post(`${p.base}/payouts`, p.owner)).json().data.payouts[0].commission_ids).toEqual([b.commissionId]);
    const list = (await get(`${p.base}/payouts?status=canceled`, p.member)).json();
    expect(list.data.map((x: { id: string }) => x.id)).toEqual([second.id]);
    // The list names the partner; otherwise each payout as its single read shows it.
    const { partner_name, ...listed } = list.data[0];
    expect(partner_name).toBe('Partner');
    expect(listed).toEqual((await get(`${p.base}/payouts/${second.id}`, p.member)).json().data);
    expect((await get(`${p.base}/payouts/${second.id}`, p.member)).json().data.status).toBe('canceled');
  });

  it('a canceled payout leaves its netted clawbacks outstanding for the next one', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const a = await sale(money.app, p, 10_000);
    const [first] = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts;
    await post(`${p.base}/payouts/${first.id}/mark-paid`, p.owner, { reference: 'R1' });
    await refund(money.app, p, a.transactionId); // clawback -1,000
    await sale(money.app, p, 50_000);
    const [second] = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts;
    expect(second).toMatchObject({ amount_minor: 4_000 });
    expect(second.clawback_entry_ids).toHaveLength(1);
    await post(`${p.base}/payouts/${second.id}/cancel`, p.owner);
    const [third] = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts;
    expect(third).toMatchObject({ amount_minor: 4_000, clawback_entry_ids: second.clawback_entry_ids });
  });

  it('exports csv, PayPal and Wise files with each partner’s payout method', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const wise = await partner(p, 'Wiser');
    const manual = await partner(p, 'Cash');
    await sale(money.app, p, 12_345);
    await sale(money.app, wise, 20_000);
    await sale(money.app, manual, 30_000);
    const put = (who: TestProgram, payload: object) => money.app.inject({ method: 'PUT', url: `${p.base}/partners/${who.partnerId}/payout-method`, headers: p.owner, payload });
    expect((await put(p, { method: 'paypal', email: 'partner@paypal.test.example' })).statusCode).toBe(200);
    expect((await put(wise, { method: 'wise', email: 'wiser@wise.test.example', name: 'Wiser Ltd', receiver_type: 'INSTITUTION' })).statusCode).toBe(200);
    expect((await put(manual, { method: 'manual', note: 'Bank transfer, IBAN on file' })).statusCode).toBe(200);
    expect((await put(wise, { method: 'wise', email: 'x@test.example' })).json().error.message).toBe("name is required and must be the account holder's name, 1 to 200 characters");
    const run = (await post(`${p.base}/payouts`, p.owner)).json().data.payouts as { id: string; partner_id: number }[];
    expect(run).toHaveLength(3);
    const idOf = (who: TestProgram) => run.find((x) => x.partner_id === who.partnerId)!.id;

    const csv = await get(`${p.base}/payouts/export?format=csv`, p.member);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const rows = parse(csv.body, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => [r.partner_id, r.amount_minor, r.amount, r.payout_method, r.payout_recipient])).toEqual([
      [String(p.partnerId), '1235', '12.35', 'paypal', 'partner@paypal.test.example'],
      [String(wise.partnerId), '2000', '20.00', 'wise', 'wiser@wise.test.example'],
      [String(manual.partnerId), '3000', '30.00', 'manual', 'Bank transfer, IBAN on file'],
    ]);

    const paypal = await get(`${p.base}/payouts/export?status=pending&format=paypal`, p.owner);
    // No header; recipient, amount, currency, customer id, note, wallet.
    expect(paypal.body).toBe(`partner@paypal.test.example,12.35,USD,partner-${p.partnerId},"Affiliate commissions, payout-${idOf(p).slice(0, 8)}",PAYPAL\n`);
    expect(paypal.headers['x-payouts-included']).toBe('1');
    expect(paypal.headers['x-payouts-omitted']).toBe('2');

    const wiseFile = await get(`${p.base}/payouts/export?format=wise`, p.owner);
    expect(wiseFile.body).toBe(
      'name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency\n' +
        `Wiser Ltd,wiser@wise.test.example,payout-${idOf(wise).slice(0, 8)},INSTITUTION,target,20.00,USD,USD\n`,
    );
    // PayPal takes one currency per file.
    const eur = await sale(money.app, p, 10_000, 'EUR');
    await post(`${p.base}/payouts`, p.owner);
    expect((await get(`${p.base}/payouts/export?format=paypal`, p.owner)).json().error.message).toBe(
      'A PayPal payouts file holds one currency: add currency= (these payouts are in several currencies)',
    );
    expect((await get(`${p.base}/payouts/export?format=paypal&currency=EUR`, p.owner)).body).toContain(',10.00,EUR,');
    expect(eur.commissionId).toBeTruthy();
    const bad = await get(`${p.base}/payouts/export?format=xml`, p.owner);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toBe('format must be one of: csv, paypal, wise');
  });
});
