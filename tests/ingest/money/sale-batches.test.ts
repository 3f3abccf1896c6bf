/**
 * Issue 34, point 8: /track/sale's batches write their repeat payments that earn nothing for the
 * whole batch at once (record_sales), and what they write is exactly what record_sale writes item by
 * item: the same answers, sales, commissions and events in the same order. Two programs get the same
 * cases; one is paid by one record_batch, the other by one record_sale call per item (PGlite and
 * Postgres).
 */
import { describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { databaseKinds } from '../../support/databases.js';
import { moneyProgram, moneyTestApp, newClick, sale, type MoneyProgram } from '../../support/money.js';

const FEE_BPS = 250;
/** Every fraud rule on, as a new program has them (the tests' programs have them off). */
const PROGRAM = { holdDays: 30, minimum: 100, settings: { fraud_rules: { self_referral: true, click_flood: true, fast_conversion: true, partner_ip: true } } };

const q = {
  batch: sql('t.sale_batch', `SELECT record_batch('sale', $1::jsonb, ${FEE_BPS}) AS results`),
  one: sql('t.sale_one', `SELECT record_sale($1::jsonb, ${FEE_BPS}) AS result`),
  fast: sql('t.sale_fast', `SELECT record_sales($1::jsonb) AS answers`),
  clickOf: sql('t.sale_click_of', `SELECT c.click_id FROM sale_events s JOIN customers c ON c.id = s.customer_id WHERE s.id = $1`),
  written: sql(
    't.sale_written',
    `SELECT s.transaction_id, s.status, s.test, s.amount_cents, s.customer_id IS NOT NULL AS has_customer, s.occurred_at < now() - interval '1 day' AS backdated,
            c.status AS commission_status, c.amount_cents AS commission_cents, f.amount_cents AS fee_cents
       FROM sale_events s LEFT JOIN commissions c ON c.sale_id = s.id LEFT JOIN platform_fees f ON f.sale_id = s.id
      WHERE s.program_id = $1 ORDER BY replace(s.transaction_id, $2, '')`,
  ),
  events: sql('t.sale_events', `SELECT o.event_type, o.aggregate_key, o.test, o.payload FROM outbox o WHERE o.program_id = $1 AND o.id > $2 ORDER BY o.id`),
  lastEvent: sql('t.sale_last_event', `SELECT COALESCE(max(id), 0) AS id FROM outbox`),
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME = /^\d{4}-\d\d-\d\dT/;

/**
 * A value with what differs between the two programs replaced: ids, clicks and transaction ids by
 * their order of first appearance, times, the program's own numbers and prefix, and how many seconds
 * after its click a held payment came.
 */
function normalizer(prefix: string) {
  const ids = new Map<string, string>();
  const named = (v: string) => {
    if (!ids.has(v)) ids.set(v, `id${ids.size + 1}`);
    return ids.get(v)!;
  };
  const walk = (v: unknown, key = ''): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === 'number' && (key === 'id' || key.endsWith('_id') || key === 'rule_version' || key === 'seconds')) return 'number';
    if (typeof v !== 'string') return v;
    if (key === 'aggregate_key' && /^\d+$/.test(v)) return 'number';
    if (UUID.test(v) || v.startsWith('txn-money-')) return named(v);
    if (TIME.test(v)) return 'time';
    const aggregate = /^(sale|customer|partner):(.+)$/.exec(v);
    if (aggregate) return `${aggregate[1]}:${/^\d+$/.test(aggregate[2]!) ? 'number' : walk(aggregate[2])}`;
    return v.replaceAll(prefix, '');
  };
  return walk;
}

describe.each(databaseKinds())('repeat payments by the batch (%s)', (kind) => {
  const money = moneyTestApp(kind);

  /**
   * One program's cases, in the order of the batch's items: three repeat payments of two converted
   * customers (record_sales writes them), then record_sale's: a repeat of the first item's
   * transaction_id, a transaction_id taken before, a new customer's first payment and its repeat, a
   * test sale, an unknown click and a backdated repeat (before the program's terms began).
   */
  async function cases(db: Database, p: MoneyProgram, prefix: string) {
    const first = await sale(money.app, p, 10_000);
    const second = await sale(money.app, p, 20_000);
    const clickOf = async (saleId: string) => (await db.one<{ click_id: string }>(q.clickOf, [saleId]))!.click_id;
    const a = await clickOf(first.saleId);
    const b = await clickOf(second.saleId);
    const fresh = await newClick(money.app, p);
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
      item(tx(1), b),
      item(first.transactionId, a),
      item(tx(4), fresh),
      item(tx(5), fresh),
      item(tx(6), a, { test: true }),
      item(tx(7), `${prefix}unknown-click`),
      item(tx(8), a, { occurred_at: '2020-01-01T00:00:00Z' }),
    ];
  }

  async function outcome(db: Database, programId: number, prefix: string, since: number) {
    const walk = normalizer(prefix);
    return {
      written: walk(await db.many(q.written, [programId, prefix])),
      events: walk(await db.many(q.events, [programId, since])),
    };
  }

  it('a batch writes and answers what record_sale writes and answers item by item', async () => {
    const { db } = money;
    const byBatch = await moneyProgram(money.app, db, PROGRAM);
    const oneByOne = await moneyProgram(money.app, db, PROGRAM);
    const batchItems = await cases(db, byBatch, `${byBatch.programId}-`);
    const oneItems = await cases(db, oneByOne, `${oneByOne.programId}-`);
    const since = Number((await db.one<{ id: string }>(q.lastEvent))!.id);

    const batchAnswers = (await db.one<{ results: unknown[] }>(q.batch, [JSON.stringify(batchItems)]))!.results;
    const oneAnswers: unknown[] = [];
    for (const item of oneItems) {
      oneAnswers.push(
        await db.one<{ result: unknown }>(q.one, [JSON.stringify(item)]).then(
          (row) => ({ ok: row!.result }),
          (error: { detail?: string; hint?: string }) => ({ refused: error.detail, hint: error.hint || null }),
        ),
      );
    }
    const a = normalizer(`${byBatch.programId}-`);
    const b = normalizer(`${oneByOne.programId}-`);
    expect(a(batchAnswers)).toEqual(b(oneAnswers));
    // The cases are what they say: three repeats that earn nothing, two duplicates, a first payment
    // with its commission, its repeat, a test sale, a refusal, a backdated repeat.
    type Answer = { ok?: { converted: boolean; commission: object | null; sale: { test: boolean } }; refused?: string };
    expect((batchAnswers as Answer[]).map((r) => r.refused ?? [r.ok!.converted, r.ok!.commission !== null, r.ok!.sale.test])).toEqual([
      [false, false, false], [false, false, false], [false, false, false], 'duplicate_transaction', 'duplicate_transaction',
      [true, true, false], [false, false, false], [false, false, true], 'customer_not_found', [false, false, false],
    ]);

    const batchOutcome = await outcome(db, byBatch.programId, `${byBatch.programId}-`, since);
    const oneOutcome = await outcome(db, oneByOne.programId, `${oneByOne.programId}-`, since);
    expect(batchOutcome).toEqual(oneOutcome);
    // sale.recorded for the seven sales and the test sale's log entry; the first payment's
    // customer.changed, commission.created, commission.held (its click is seconds old),
    // platform_fee.created and ledger_entry.recorded.
    expect((batchOutcome.events as { event_type: string }[]).map((e) => e.event_type).sort()).toEqual(
      [...Array(7).fill('sale.recorded'), 'test_event.logged', 'customer.changed', 'commission.created', 'commission.held', 'platform_fee.created', 'ledger_entry.recorded'].sort(),
    );
  });

  it('record_sales takes the plain items and leaves the others', async () => {
    const { db } = money;
    const p = await moneyProgram(money.app, db, PROGRAM);
    const items = await cases(db, p, `${p.programId}-`);
    const answers = (await db.one<{ answers: (object | null)[] }>(q.fast, [JSON.stringify(items)]))!.answers;
    expect(answers.map((x) => x !== null)).toEqual([true, true, true, false, false, false, false, false, false, false]);
  });
});
