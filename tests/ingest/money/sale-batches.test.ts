/**
 * Issue 34, point 8: /track/sale's batches write their repeat payments that earn nothing
 * (record_sales) and their clicks' first payments (record_first_payments) for the whole batch at
 * once, and what they write is exactly what record_sale writes item by item: the same answers,
 * sales, customers, commissions, fees, ledger entries and events in the same order. Two programs
 * get the same cases; one is paid by one record_batch, the other by one record_sale call per item.
 * Three kinds of program: the fraud rules on (every first payment held, as in bench:ingest), no
 * rule and a hold (pending), no rule and no hold (approved). PGlite and Postgres.
 */
import { describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { databaseKinds } from '../../support/databases.js';
import { batchAndOneByOne, moneyProgram, moneyTestApp, newClick, normalizer, sale, type MoneyProgram } from '../../support/money.js';

const FEE_BPS = 250;
const EVERY_RULE = { self_referral: true, click_flood: true, fast_conversion: true, partner_ip: true };
/** The kinds of program: every fraud rule on, as a new program has them (the tests' programs have them off); none, with and without a hold. */
const PROGRAMS = [
  { name: 'fraud rules on', held: true, program: { holdDays: 30, minimum: 100, settings: { fraud_rules: EVERY_RULE } } },
  { name: 'a hold', held: false, program: { holdDays: 30, minimum: 100 } },
  { name: 'no hold', held: false, program: { holdDays: 0, minimum: 100 } },
];

const q = {
  batch: sql('t.sale_batch', `SELECT record_batch('sale', $1::jsonb, ${FEE_BPS}) AS results`),
  one: sql('t.sale_one', `SELECT record_sale($1::jsonb, ${FEE_BPS}) AS result`),
  repeats: sql('t.sale_repeats', `SELECT record_sales($1::jsonb) AS answers`),
  firsts: sql('t.sale_firsts', `SELECT record_first_payments($1::jsonb, ${FEE_BPS}) AS answers`),
  clickOf: sql('t.sale_click_of', `SELECT c.click_id FROM sale_events s JOIN customers c ON c.id = s.customer_id WHERE s.id = $1`),
  waiting: sql(
    't.sale_waiting',
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%record_batch%'`,
  ),
  counts: sql(
    't.sale_counts',
    `SELECT (SELECT count(*)::int FROM customers WHERE click_id = $2) AS customers, (SELECT count(*)::int FROM sale_events WHERE program_id = $1) AS sales,
            (SELECT count(*)::int FROM commissions WHERE program_id = $1) AS commissions, (SELECT count(*)::int FROM ledger_entries WHERE program_id = $1) AS entries`,
  ),
  written: sql(
    't.sale_written',
    `SELECT s.transaction_id, s.status, s.test, s.amount_cents, s.customer_id IS NOT NULL AS has_customer, s.occurred_at < now() - interval '1 day' AS backdated,
            c.status AS commission_status, c.amount_cents AS commission_cents, c.hold_reasons IS NOT NULL AS hold_reasons,
            extract(epoch FROM c.available_at - c.created_at)::int AS hold_seconds, f.amount_cents AS fee_cents,
            cu.status AS customer_status, cu.customer_key, cu.first_purchase_date IS NOT NULL AS first_purchase,
            (SELECT count(*)::int FROM customers o WHERE o.program_id = s.program_id AND o.id <= cu.id) AS customer_rank,
            (SELECT COALESCE(jsonb_agg(jsonb_build_array(e.kind, e.amount_minor, e.cause LIKE 'sale:%') ORDER BY e.id), '[]')
               FROM ledger_entries e WHERE e.commission_id = c.id) AS entries
       FROM sale_events s LEFT JOIN commissions c ON c.sale_id = s.id LEFT JOIN platform_fees f ON f.sale_id = s.id
       LEFT JOIN customers cu ON cu.id = s.customer_id
      WHERE s.program_id = $1 ORDER BY replace(s.transaction_id, $2, '')`,
  ),
  events: sql('t.sale_events', `SELECT o.event_type, o.aggregate_key, o.test, o.payload FROM outbox o WHERE o.program_id = $1 AND o.id > $2 ORDER BY o.id`),
};

describe.each(databaseKinds())('sales by the batch (%s)', (kind) => {
  const money = moneyTestApp(kind);

  /**
   * One program's cases, in the order of the batch's items: three repeat payments of two converted
   * customers (record_sales writes them) and two new clicks' first payments, one of no amount
   * (record_first_payments writes them); then record_sale's: a repeat of the first item's
   * transaction_id, a transaction_id taken before, a repeat of a first payment of this batch, a test
   * sale, an unknown click, a backdated repeat (before the program's terms began), a first payment
   * with a customer key and, after it, a payment of the same click without one.
   */
  async function cases(db: Database, p: MoneyProgram, prefix: string) {
    const first = await sale(money.app, p, 10_000);
    const second = await sale(money.app, p, 20_000);
    const clickOf = async (saleId: string) => (await db.one<{ click_id: string }>(q.clickOf, [saleId]))!.click_id;
    const a = await clickOf(first.saleId);
    const b = await clickOf(second.saleId);
    const [fresh1, fresh2, fresh3] = [await newClick(money.app, p), await newClick(money.app, p), await newClick(money.app, p)];
    const item = (transactionId: string, clickId: string, more: Record<string, unknown> = {}) => ({
      program_id: p.programId, transaction_id: transactionId, amount_cents: 5_000, customer_key: null, click_id: clickId, currency: 'USD',
      occurred_at: null, provider: null, provider_payment_id: null, livemode: null, is_recurring: false, sale_type: null, subscription_id: null,
      test: false, ...more,
    });
    const tx = (n: number) => `txn-money-${prefix}${n}`;
    return [
      item(tx(1), a),
      item(tx(2), b, { amount_cents: 7_000, provider: 'stripe', provider_payment_id: `pi_${prefix}2`, livemode: false }),
      item(tx(3), a, { is_recurring: true, sale_type: 'renewal', subscription_id: `sub_${prefix}a` }),
      item(tx(4), fresh1, { amount_cents: 12_345 }),
      item(tx(5), fresh2, { amount_cents: 0 }),
      item(tx(1), b),
      item(first.transactionId, a),
      item(tx(6), fresh1),
      item(tx(7), a, { test: true }),
      item(tx(8), `${prefix}unknown-click`),
      item(tx(9), a, { occurred_at: '2020-01-01T00:00:00Z' }),
      item(tx(10), fresh3, { customer_key: `${prefix}key` }),
      item(tx(11), fresh3),
    ];
  }

  async function outcome(db: Database, programId: number, prefix: string, since: number) {
    const walk = normalizer(prefix);
    return {
      written: walk(await db.many(q.written, [programId, prefix])),
      events: walk(await db.many(q.events, [programId, since])),
    };
  }

  it.each(PROGRAMS)('a batch writes and answers what record_sale writes and answers item by item ($name)', async ({ held, program }) => {
    const { db } = money;
    const { byBatch, oneByOne, since, batchAnswers, answers } = await batchAndOneByOne(money.app, db, program, (p, prefix) => cases(db, p, prefix), q);
    expect(answers.byBatch).toEqual(answers.oneByOne);
    // The cases are what they say: three repeats that earn nothing, two first payments with their
    // commissions, two duplicates, a repeat, a test sale, a refusal, a backdated repeat, a first
    // payment with a key and its repeat.
    type Answer = { ok?: { converted: boolean; commission: { status: string } | null; sale: { test: boolean } }; refused?: string };
    const first = held ? 'held' : program.holdDays === 0 ? 'approved' : 'pending';
    expect((batchAnswers as Answer[]).map((r) => r.refused ?? [r.ok!.converted, r.ok!.commission?.status ?? null, r.ok!.sale.test])).toEqual([
      [false, null, false], [false, null, false], [false, null, false], [true, first, false], [true, first, false],
      'duplicate_transaction', 'duplicate_transaction', [false, null, false], [false, null, true], 'customer_not_found',
      [false, null, false], [true, first, false], [false, null, false],
    ]);

    const batchOutcome = await outcome(db, byBatch.programId, `${byBatch.programId}-`, since);
    const oneOutcome = await outcome(db, oneByOne.programId, `${oneByOne.programId}-`, since);
    expect(batchOutcome).toEqual(oneOutcome);
    // sale.recorded for the ten sales and the test sale's log entry; each of the three first
    // payments' customer.changed, commission.created, commission.held (with the rules on: its click
    // is seconds old) and platform_fee.created; ledger_entry.recorded for the two with an amount.
    const three = (type: string) => Array<string>(3).fill(type);
    expect((batchOutcome.events as { event_type: string }[]).map((e) => e.event_type).sort()).toEqual(
      [
        ...Array<string>(10).fill('sale.recorded'), 'test_event.logged', ...three('customer.changed'), ...three('commission.created'),
        ...(held ? three('commission.held') : []), ...three('platform_fee.created'), 'ledger_entry.recorded', 'ledger_entry.recorded',
      ].sort(),
    );
  });

  it('record_sales and record_first_payments take their plain items and leave the others', async () => {
    const { db } = money;
    const p = await moneyProgram(money.app, db, PROGRAMS[0]!.program);
    const items = JSON.stringify(await cases(db, p, `${p.programId}-`));
    const repeats = (await db.one<{ answers: (object | null)[] }>(q.repeats, [items]))!.answers;
    const firsts = (await db.one<{ answers: (object | null)[] }>(q.firsts, [items]))!.answers;
    const taken = (answers: (object | null)[]) => answers.map((x, i) => (x === null ? null : i + 1)).filter((i) => i !== null);
    expect(taken(repeats)).toEqual([1, 2, 3]);
    expect(taken(firsts)).toEqual([4, 5]);
  });

  // Postgres only: PGlite has one connection, so two batches never overlap there.
  it.runIf(kind === 'postgres')('two batches paying one new click at once make one customer and one commission', async () => {
    const { db } = money;
    const p = await moneyProgram(money.app, db, PROGRAMS[1]!.program);
    const click = await newClick(money.app, p);
    const item = (n: number) => ({
      program_id: p.programId, transaction_id: `txn-money-race-${p.programId}-${n}`, amount_cents: 5_000, customer_key: null, click_id: click,
      currency: 'USD', occurred_at: null, provider: null, provider_payment_id: null, livemode: null, is_recurring: false, sale_type: null,
      subscription_id: null, test: false,
    });
    type Results = { results: { ok: { converted: boolean; commission: object | null } }[] };
    let second: Promise<Results | undefined> | undefined;
    // The first batch holds the click's lock until the second waits for it, then commits.
    const first = await db.transaction(async (tx) => {
      const answer = await tx.one<Results>(q.batch, [JSON.stringify([item(1)])]);
      second = db.one<Results>(q.batch, [JSON.stringify([item(2)])]);
      for (let i = 0; i < 100 && (await db.one<{ n: number }>(q.waiting))!.n === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect((await db.one<{ n: number }>(q.waiting))!.n).toBe(1);
      return answer;
    });
    const other = await second!;
    expect([first!.results[0]!.ok.converted, first!.results[0]!.ok.commission !== null]).toEqual([true, true]);
    expect([other!.results[0]!.ok.converted, other!.results[0]!.ok.commission]).toEqual([false, null]);
    expect(await db.one(q.counts, [p.programId, click])).toEqual({ customers: 1, sales: 2, commissions: 1, entries: 1 });
  });
});
