/**
 * Issue 34, points 2 and 8: /track/refund's batches write their common refunds for the whole batch at
 * once (record_refunds), and what they write is exactly what record_refund writes item by item: the
 * same answers, sale, commission and fee states, ledger entries and events in the same order. Two
 * programs get the same cases; one is refunded by one record_batch, the other by one record_refund
 * call per item (PGlite and Postgres).
 */
import { describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { databaseKinds } from '../../support/databases.js';
import { batchAndOneByOne, endHolds, moneyProgram, moneyTestApp, normalizer, refund, sale, type MoneyProgram } from '../../support/money.js';

const q = {
  batch: sql('t.refund_batch', `SELECT record_batch('refund', $1::jsonb, 0) AS results`),
  one: sql('t.refund_one', `SELECT record_refund($1::jsonb) AS result`),
  fast: sql('t.refund_fast', `SELECT record_refunds($1::jsonb) AS answers`),
  hold: sql('t.refund_hold', `UPDATE commissions SET status = 'held', held_at = now() WHERE id = $1`),
  approve: sql('t.refund_approve', `SELECT approve_due_commissions(100, $1) AS approved`),
  written: sql(
    't.refund_written',
    `SELECT s.transaction_id, s.status AS sale_status, c.status AS commission_status, f.status AS fee_status,
            (SELECT COALESCE(jsonb_agg(jsonb_build_array(e.kind, e.amount_minor, e.cause LIKE 'refund:%') ORDER BY e.id), '[]')
               FROM ledger_entries e WHERE e.commission_id = c.id) AS entries
       FROM sale_events s LEFT JOIN commissions c ON c.sale_id = s.id LEFT JOIN platform_fees f ON f.sale_id = s.id
      WHERE s.program_id = $1 ORDER BY s.created_at, s.transaction_id`,
  ),
  events: sql(
    't.refund_events',
    `SELECT o.event_type, o.payload FROM outbox o
      WHERE o.program_id = $1 AND o.event_type IN ('sale.status_changed', 'commission.reversed', 'platform_fee.reversed', 'ledger_entry.recorded')
        AND o.id > $2 ORDER BY o.id`,
  ),
};

describe.each(databaseKinds())('refunds by the batch (%s)', (kind) => {
  const money = moneyTestApp(kind);

  /**
   * One program's cases, in the order of the batch's items: refunds and a chargeback of pending and
   * held commissions (record_refunds writes them), then an approved and a paid commission, a repeat
   * of the first item, a sale refunded before, an unknown transaction (record_refund's).
   */
  async function cases(db: Database, p: MoneyProgram, prefix: string) {
    const paid = await sale(money.app, p, 50_000);
    await endHolds(db, p.programId);
    await money.post(`${p.base}/payouts`, p.owner).then(async (run) => {
      for (const payout of run.json().data.payouts) await money.post(`${p.base}/payouts/${payout.id}/mark-paid`, p.owner, { reference: 'R' });
    });
    const approved = await sale(money.app, p, 40_000);
    await endHolds(db, p.programId);
    await db.one(q.approve, [p.programId]);
    const pending = await sale(money.app, p, 10_000);
    const held = await sale(money.app, p, 20_000);
    await db.many(q.hold, [held.commissionId]);
    const chargedBack = await sale(money.app, p, 30_000);
    const before = await sale(money.app, p, 15_000);
    expect((await refund(money.app, p, before.transactionId)).statusCode).toBe(200);
    const item = (transactionId: string, reason = 'refund') => ({ program_id: p.programId, transaction_id: transactionId, reason, refund_reason: 'asked' });
    return [
      item(pending.transactionId),
      item(held.transactionId),
      item(chargedBack.transactionId, 'chargeback'),
      item(approved.transactionId),
      item(paid.transactionId, 'chargeback'),
      item(pending.transactionId),
      item(before.transactionId),
      item(`${prefix}unknown`),
    ];
  }

  async function outcome(db: Database, programId: number, prefix: string, since: number) {
    const walk = normalizer(prefix);
    return {
      written: walk(await db.many(q.written, [programId])),
      events: walk(await db.many(q.events, [programId, since])),
    };
  }

  it('a batch writes and answers what record_refund writes and answers item by item', async () => {
    const { db } = money;
    const { byBatch, oneByOne, since, batchAnswers, answers } = await batchAndOneByOne(
      money.app, db, { holdDays: 30, minimum: 100 }, (p, prefix) => cases(db, p, prefix), q,
    );
    expect(answers.byBatch).toEqual(answers.oneByOne);
    // The cases are what they say: four reversals (pending, held, a chargeback, approved), a clawback
    // of the paid one, two repeats, a refusal.
    expect((batchAnswers as { ok?: { recorded: boolean; commission_reversed: boolean } }[]).map((r) => r.ok && [r.ok.recorded, r.ok.commission_reversed])).toEqual([
      [true, true], [true, true], [true, true], [true, true], [true, false], [false, true], [false, true], undefined,
    ]);
    expect(batchAnswers[7]).toMatchObject({ refused: 'sale_not_found' });

    const batchOutcome = await outcome(db, byBatch.programId, `${byBatch.programId}-`, since);
    const oneOutcome = await outcome(db, oneByOne.programId, `${oneByOne.programId}-`, since);
    expect(batchOutcome).toEqual(oneOutcome);
    expect(batchOutcome.events).toHaveLength(3 * 4 + 1 + 1);
  });

  it('record_refunds takes the plain items and leaves the others', async () => {
    const { db } = money;
    const p = await moneyProgram(money.app, db, { holdDays: 30, minimum: 100 });
    const items = await cases(db, p, `${p.programId}-`);
    const answers = (await db.one<{ answers: (object | null)[] }>(q.fast, [JSON.stringify(items)]))!.answers;
    expect(answers.map((x) => x !== null)).toEqual([true, true, true, false, false, false, false, false]);
  });
});
