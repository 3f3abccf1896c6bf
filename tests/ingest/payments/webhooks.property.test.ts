import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Database, type NamedQuery, type Transaction } from '../../../core/db.js';
import { buildTestApp, createTestProgram, createTestWorkspace, freshIp, PROCESSOR_SECRETS, TEST_SECRETS_KEY, type TestProgram, type Workspace } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { referencePerformance } from '../../support/oracle-reference.js';
import { charge, checkoutSession, deliver, deliverHttp, dispute, event, invoiceLegacy, invoiceNewer, type Metadata } from '../../support/processor.js';

/**
 * Exactly once, in any order: a random history of processor events, delivered 1 to 3 times each,
 * shuffled, with the service killed mid-way, ends in the same sales, commissions, customers and
 * outbox events as the same history applied once in order (to a twin program of the same database).
 *
 * Partial refunds: each charge.refunded carries the charge's refunded total so far. Arriving out
 * of order, an older total after a newer one applies nothing, so a paid sale ends with the highest
 * total in any order, but the number of increments (partial_refunds rows, their outbox events)
 * depends on the order: those events are compared by their effect (the totals), not counted. A
 * full refund or chargeback ends a sale whatever partial refunds came before it; what they had
 * taken off by then depends on the order, so an ended sale is compared by its status and the
 * commission it first earned (docs/decisions/payments.md, "Partial refunds").
 *
 * The ledger likewise (docs/decisions/ledger.md): one adjustment entry per applied increment, and
 * a reversal only of what partial refunds had left, so its entries are compared by their effect:
 * per sale, the commission entry and the sum of every entry; and each entry has exactly one
 * ledger_entry.recorded event.
 */

interface Renewal {
  amount: number;
  layout: 'newer' | 'legacy';
  refund: boolean;
  /** Partial refunds before any full one, as percentages of the amount: the totals grow. */
  partials: number[];
}
interface Payment {
  kind: 'oneoff' | 'sub';
  /** Index of the customer in the metadata, or null: no metadata (skipped). */
  customer: number | null;
  amount: number;
  refund: boolean;
  dispute: boolean;
  partials: number[];
  renewals: Renewal[];
}

const CUSTOMERS = 3;
const arbPartials = fc.array(fc.integer({ min: 1, max: 99 }), { maxLength: 3 });
const arbPayment: fc.Arbitrary<Payment> = fc.record({
  kind: fc.constantFrom('oneoff' as const, 'sub' as const),
  customer: fc.option(fc.integer({ min: 0, max: CUSTOMERS - 1 }), { freq: 5 }),
  amount: fc.oneof(fc.integer({ min: 100, max: 50_000 }), fc.constant(0)),
  refund: fc.boolean(),
  dispute: fc.boolean(),
  partials: arbPartials,
  renewals: fc.array(
    fc.record({ amount: fc.integer({ min: 100, max: 20_000 }), layout: fc.constantFrom('newer' as const, 'legacy' as const), refund: fc.boolean(), partials: arbPartials }),
    { maxLength: 3 },
  ),
});

/** The charge's refunded totals of the partial refunds: growing, each above 0 and below the amount. */
const partialTotals = (amount: number, percents: number[]) =>
  [...new Set(percents.map((pct) => Math.floor((amount * pct) / 100)))].filter((t) => t > 0 && t < amount).sort((a, b) => a - b);

interface Twin {
  program: TestProgram;
  clickIds: string[];
}

/** The history as processor events for one twin; every id carries the twin's prefix. */
function materialize(history: Payment[], twin: Twin, prefix: string): object[] {
  const events: object[] = [];
  let n = 0;
  const created = 1_700_000_000;
  const opts = () => ({ eventId: `evt_${prefix}_${++n}`, created: created + n });
  // No account on these events: the program is named by the metadata.
  const metadata = (p: Payment): Metadata =>
    p.customer === null ? { program_id: String(twin.program.programId) } : { program_id: String(twin.program.programId), svc_click_id: twin.clickIds[p.customer]! };
  history.forEach((p, i) => {
    const md = metadata(p);
    if (p.kind === 'oneoff') {
      const pi = `pi_${prefix}_${i}`;
      const ch = `ch_${prefix}_${i}`;
      events.push(event('checkout.session.completed', checkoutSession({ id: `cs_${prefix}_${i}`, payment_intent: pi, amount_total: p.amount, payment_status: p.amount === 0 ? 'no_payment_required' : 'paid', metadata: md }), opts()));
      for (const total of partialTotals(p.amount, p.partials)) {
        events.push(event('charge.refunded', charge({ id: ch, payment_intent: pi, amount: p.amount, amount_refunded: total }), opts()));
      }
      if (p.refund) events.push(event('charge.refunded', charge({ id: ch, payment_intent: pi, amount: p.amount || 1 }), opts()));
      else if (p.dispute) events.push(event('charge.dispute.created', dispute({ charge: ch, payment_intent: pi }), opts()));
      return;
    }
    const sub = `sub_${prefix}_${i}`;
    const first = `in_${prefix}_${i}_0`;
    const c = opts();
    events.push(event('checkout.session.completed', checkoutSession({ id: `cs_${prefix}_${i}`, mode: 'subscription', invoice: first, subscription: sub, payment_intent: null, amount_total: p.amount, payment_status: p.amount === 0 ? 'no_payment_required' : 'paid', metadata: md }), c));
    events.push(event('invoice.payment_succeeded', invoiceNewer({ id: first, amount_paid: p.amount, billing_reason: 'subscription_create', subscription: sub, metadata: md }), { eventId: `evt_${prefix}_${++n}`, created: c.created }));
    p.renewals.forEach((r, j) => {
      const id = `in_${prefix}_${i}_${j + 1}`;
      const pi = `pi_${prefix}_${i}_${j + 1}`;
      const ch = `ch_${prefix}_${i}_${j + 1}`;
      const input = { id, amount_paid: r.amount, subscription: sub, metadata: md, payment_intent: pi, charge: ch };
      events.push(event('invoice.payment_succeeded', r.layout === 'newer' ? invoiceNewer(input) : invoiceLegacy(input), opts()));
      const totals = partialTotals(r.amount, r.partials);
      if (!r.refund && totals.length === 0) return;
      if (r.layout === 'newer') {
        events.push(event('invoice_payment.paid', { id: `inpay_${prefix}_${i}_${j}`, object: 'invoice_payment', invoice: id, payment: { type: 'payment_intent', payment_intent: pi } }, opts()));
      }
      const refunded = (total: number) =>
        r.layout === 'newer'
          ? charge({ id: ch, payment_intent: pi, amount: r.amount, amount_refunded: total })
          : charge({ id: ch, payment_intent: null, amount: r.amount, amount_refunded: total, invoice: id });
      for (const total of totals) events.push(event('charge.refunded', refunded(total), opts()));
      if (r.refund) events.push(event('charge.refunded', refunded(r.amount), opts()));
    });
  });
  return events;
}

/** The highest partial total of every charge the history leaves partly refunded, by transaction id (without the prefix). */
function expectedPartialTotals(history: Payment[]): Map<string, { amount: number; total: number }> {
  const totals = new Map<string, { amount: number; total: number }>();
  history.forEach((p, i) => {
    if (p.kind === 'oneoff') {
      const last = partialTotals(p.amount, p.partials).at(-1);
      if (last !== undefined && !p.refund && !p.dispute) totals.set(`pi_X_${i}`, { amount: p.amount, total: last });
      return;
    }
    p.renewals.forEach((r, j) => {
      const last = partialTotals(r.amount, r.partials).at(-1);
      if (last !== undefined && !r.refund) totals.set(`in_X_${i}_${j + 1}`, { amount: r.amount, total: last });
    });
  });
  return totals;
}

/** a x total / amount in whole cents, half up, in integers (the rule of record_partial_refund). */
const shareOf = (a: number, total: number, amount: number) => Math.floor((2 * a * total + amount) / (2 * amount));

/** A Database whose statements all fail once it is killed: what a process killed mid-transaction leaves (nothing committed). */
function killable(db: Database) {
  let budget = Infinity;
  const check = () => {
    budget -= 1;
    if (budget < 0) throw new Error('service killed');
  };
  const wrap = <Q extends { many: Database['many']; one: Database['one'] }>(q: Q) => ({
    many: <R>(query: NamedQuery, params?: readonly unknown[]) => (check(), q.many<R>(query, params)),
    one: <R>(query: NamedQuery, params?: readonly unknown[]) => (check(), q.one<R>(query, params)),
  });
  const wrapped: Database = {
    kind: db.kind,
    ...wrap(db),
    transaction: (fn) => db.transaction((tx) => fn({ ...wrap(tx), script: tx.script, savepoint: tx.savepoint } satisfies Transaction)),
    close: async () => {},
  };
  return { db: wrapped, killAfter: (statements: number) => void (budget = statements) };
}

/** Fisher-Yates with a small seeded generator, so fast-check can shrink and replay the order. */
function shuffle<T>(items: T[], seed: number) {
  let x = seed | 0 || 1;
  for (let i = items.length - 1; i > 0; i -= 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = Math.abs(x) % (i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** `main.ts ingest` on the test database, in its own process; resolves when it listens. */
async function startIngest(databaseUrl: string): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', 'ingest'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn',
      SEED_DEMO: 'false', PIPELINE: 'off', TRUST_PROXY: '127.0.0.1', PROCESSOR_WEBHOOK_SECRETS: PROCESSOR_SECRETS.join(','),
      SECRETS_KEY: TEST_SECRETS_KEY.toString('base64'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ingest did not start:\n${output}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on (http:\/\/[0-9.:]+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => reject(new Error(`ingest exited (${code}):\n${output}`)));
  });
  return { child, base };
}

const q = {
  sales: sql(
    't.prop_sales',
    `SELECT s.transaction_id, s.amount_cents, s.status, s.is_recurring, s.test, s.partner_id IS NOT NULL AS attributed,
            c.status AS commission_status, f.status AS fee_status,
            (c.amount_cents + c.reversed_cents)::int AS commission_earned, (f.amount_cents + f.reversed_cents)::int AS fee_charged,
            -- What is left after partial refunds: only a paid sale keeps it (see the comment at the top).
            CASE WHEN s.status = 'paid' THEN s.refunded_cents::int END AS refunded,
            CASE WHEN s.status = 'paid' THEN c.amount_cents::int END AS commission,
            CASE WHEN s.status = 'paid' THEN f.amount_cents::int END AS fee
       FROM sale_events s LEFT JOIN commissions c ON c.sale_id = s.id LEFT JOIN platform_fees f ON f.sale_id = s.id
      WHERE s.program_id = $1`,
  ),
  customers: sql('t.prop_customers', `SELECT click_id, status, provisional FROM customers WHERE program_id = $1`),
  outbox: sql(
    't.prop_outbox',
    `SELECT event_type, count(*)::int AS n FROM outbox
      WHERE program_id = $1 AND event_type NOT IN ('sale.partially_refunded', 'commission.adjusted', 'platform_fee.adjusted', 'ledger_entry.recorded')
      GROUP BY event_type ORDER BY event_type`,
  ),
  ledger: sql(
    't.prop_ledger',
    `SELECT s.transaction_id, count(*) FILTER (WHERE e.kind = 'commission')::int AS commission_entries,
            sum(e.amount_minor)::int AS balance
       FROM ledger_entries e JOIN sale_events s ON s.id = e.sale_id
      WHERE e.program_id = $1 GROUP BY s.transaction_id`,
  ),
  // Entries without exactly one event, and events without their entry: none. A reversal entry travels
  // in its commission.reversed, every other entry in a ledger_entry.recorded.
  ledgerEvents: sql(
    't.prop_ledger_events',
    `SELECT count(*)::int AS n FROM ledger_entries e
       FULL JOIN (SELECT COALESCE(payload->>'entry_id', payload->'ledger_entry'->>'entry_id')::bigint AS entry_id, count(*) AS events FROM outbox
                   WHERE program_id = $1 AND (event_type = 'ledger_entry.recorded'
                                              OR (event_type = 'commission.reversed' AND payload->'ledger_entry' <> 'null'::jsonb))
                   GROUP BY 1) o ON o.entry_id = e.id
      WHERE (e.program_id = $1 OR e.id IS NULL) AND (o.events IS DISTINCT FROM 1 OR e.id IS NULL)`,
  ),
  partialTotals: sql(
    't.prop_partial_totals',
    `SELECT s.transaction_id, max(r.refunded_cents)::int AS refunded FROM partial_refunds r JOIN sale_events s ON s.id = r.sale_id
      WHERE s.program_id = $1 AND s.status = 'paid' GROUP BY 1`,
  ),
};

describe.each(databaseKinds())('processor events exactly once, in any order, on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let workspace: Workspace;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    workspace = await createTestWorkspace(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const twin = async (): Promise<Twin> => {
    const program = await createTestProgram(app, t.db, { commission_type: 'recurring_percent', commission_rate: 15 }, workspace);
    const clickIds: string[] = [];
    for (let i = 0; i < CUSTOMERS; i += 1) {
      const click = await app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` } });
      const clickId = click.json().click_id as string;
      await app.inject({ method: 'POST', url: '/api/v1/track/lead', headers: { authorization: `Bearer ${program.apiKey}` }, payload: { click_id: clickId, customer_key: `k_${clickId}` } });
      clickIds.push(clickId);
    }
    return { program, clickIds };
  };

  const state = async (tw: Twin, prefix: string) => {
    const strip = (s: string) => s.replaceAll(prefix, 'X');
    const sales = (await t.db.many<{ transaction_id: string }>(q.sales, [tw.program.programId]))
      .map((s) => ({ ...s, transaction_id: strip(s.transaction_id) }))
      .sort((a, b) => a.transaction_id.localeCompare(b.transaction_id));
    const customers = (await t.db.many<{ click_id: string; status: string; provisional: boolean }>(q.customers, [tw.program.programId]))
      .map((c) => ({ ...c, click_id: tw.clickIds.indexOf(c.click_id) }))
      .sort((a, b) => a.click_id - b.click_id);
    const ledger = (await t.db.many<{ transaction_id: string }>(q.ledger, [tw.program.programId]))
      .map((l) => ({ ...l, transaction_id: strip(l.transaction_id) }))
      .sort((a, b) => a.transaction_id.localeCompare(b.transaction_id));
    const [unmatched] = await t.db.many<{ n: number }>(q.ledgerEvents, [tw.program.programId]);
    return { sales, customers, outbox: await t.db.many(q.outbox, [tw.program.programId]), ledger, unmatchedLedgerEvents: unmatched!.n };
  };

  /**
   * One history applied once in order to a twin program (the reference), and the deliveries of
   * the same history to another twin: each event 1 to 3 times, shuffled.
   */
  const scenario = async (history: Payment[], copies: fc.Stream<number>, seed: number, tag: string) => {
    const inOrder = await twin();
    const shuffled = await twin();
    const refPrefix = `${tag}r${Date.now()}`;
    const testPrefix = `${tag}s${Date.now()}`;
    for (const e of materialize(history, inOrder, refPrefix)) expect((await deliver(app, e)).statusCode).toBe(200);
    const events = materialize(history, shuffled, testPrefix);
    const copiesIt = copies[Symbol.iterator]();
    const deliveries = events.flatMap((e) => Array.from({ length: copiesIt.next().value as number }, () => e));
    shuffle(deliveries, seed);
    return {
      events,
      deliveries,
      same: async () => {
        const reference = await state(inOrder, refPrefix);
        expect(await state(shuffled, testPrefix)).toEqual(reference);
        expect(reference.unmatchedLedgerEvents).toBe(0);
        // The dashboard's numbers (the spec's reading of the Postgres state) too, partial refunds included.
        const now = Date.now();
        const dashboard = (tw: Twin) => referencePerformance(t.db, tw.program.programId, { period: 'all' }, now);
        expect(await dashboard(shuffled)).toEqual(await dashboard(inOrder));
        // The reference against the history itself: each partly refunded sale has its highest total
        // taken off once, the commission and the fee that share of what they first were.
        const expected = expectedPartialTotals(history);
        type Sale = { transaction_id: string; status: string; refunded: number | null; commission: number | null; commission_earned: number | null; fee: number | null; fee_charged: number | null };
        for (const sale of reference.sales as Sale[]) {
          const e = expected.get(sale.transaction_id);
          if (sale.status !== 'paid') continue;
          expect(sale.refunded, sale.transaction_id).toBe(e?.total ?? 0);
          if (e && sale.commission_earned !== null) {
            expect(sale.commission, sale.transaction_id).toBe(sale.commission_earned - shareOf(sale.commission_earned, e.total, e.amount));
            expect(sale.fee, sale.transaction_id).toBe(sale.fee_charged! - shareOf(sale.fee_charged!, e.total, e.amount));
          }
        }
        const totals = await t.db.many<{ transaction_id: string; refunded: number }>(q.partialTotals, [shuffled.program.programId]);
        expect(new Map(totals.map((r) => [r.transaction_id.replaceAll(testPrefix, 'X'), { total: r.refunded }]))).toEqual(
          new Map([...expected].filter(([txn]) => reference.sales.some((s) => (s as Sale).transaction_id === txn && (s as Sale).status === 'paid')).map(([txn, e]) => [txn, { total: e.total }])),
        );
      },
    };
  };

  it('delivered 1 to 3 times, shuffled, killed mid-way: the same state as once in order', async () => {
    let run = 0;
    let killed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbPayment, { minLength: 1, maxLength: 6 }),
        fc.infiniteStream(fc.integer({ min: 1, max: 3 })),
        fc.integer({ min: 1, max: 10 }),
        fc.integer(),
        async (history, copies, killAfter, seed) => {
          run += 1;
          const { events, deliveries, same } = await scenario(history, copies, seed, `p${run}`);
          const acknowledged = new Set<string>();
          const send = async (target: FastifyInstance, e: object) => {
            const res = await deliver(target, e);
            if (res.statusCode === 200) acknowledged.add((e as { id: string }).id);
            else {
              expect(res.statusCode).toBe(500);
              killed += 1;
            }
          };
          // First half to a service that is killed at a random statement of a concurrent batch.
          const service = killable(t.db);
          const doomed = await buildTestApp(service.db);
          const half = Math.ceil(deliveries.length / 2);
          for (let i = 0; i < half; i += 4) await Promise.all(deliveries.slice(i, i + 4).map((e) => send(doomed, e)));
          service.killAfter(killAfter);
          await Promise.all(deliveries.slice(half, half + 8).map((e) => send(doomed, e)));
          await doomed.close();
          // The restarted service gets the rest, and the processor retries whatever was not acknowledged.
          for (const e of deliveries.slice(half + 8)) await send(app, e);
          for (const e of events) if (!acknowledged.has((e as { id: string }).id)) await send(app, e);
          expect(acknowledged.size).toBe(events.length);

          await same();
        },
      ),
      { numRuns: kind === 'pglite' ? 12 : 8 },
    );
    // The kill did land inside requests: some deliveries failed and were retried.
    expect(killed).toBeGreaterThan(0);
  }, 240_000);

  it.runIf(kind === 'postgres')('the ingest process killed with SIGKILL mid-batch: the same state as once in order', async () => {
    let run = 0;
    let lost = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbPayment, { minLength: 3, maxLength: 6 }),
        fc.infiniteStream(fc.integer({ min: 1, max: 3 })),
        fc.integer({ min: 0, max: 99 }),
        fc.integer(),
        async (history, copies, killAtPercent, seed) => {
          run += 1;
          const { events, deliveries, same } = await scenario(history, copies, seed, `k${run}`);
          const acknowledged = new Set<string>();
          const send = async (base: string, e: object) => {
            const status = await deliverHttp(base, e);
            if (status === 200) acknowledged.add((e as { id: string }).id);
            else lost += 1;
          };
          const first = await startIngest(t.url!);
          const half = Math.ceil(deliveries.length / 2);
          let lastBatchMs = 0;
          for (let i = 0; i < half; i += 4) {
            const started = performance.now();
            await Promise.all(deliveries.slice(i, i + 4).map((e) => send(first.base, e)));
            lastBatchMs = performance.now() - started;
          }
          // A batch of up to 8 in flight, and the process killed while it runs: at a random share of
          // twice the time the last batch of 4 took in this very run, so the kill falls inside the
          // batch on a fast machine as on a slow one (a fixed 0 to 40 ms came after the whole batch in
          // three runs out of three on a fast one). The first run kills as the batch leaves, so at
          // least one kill cannot miss.
          const batch = Promise.all(deliveries.slice(half, half + 8).map((e) => send(first.base, e)));
          if (run > 1) await new Promise((r) => setTimeout(r, (killAtPercent / 100) * 2 * lastBatchMs));
          first.child.kill('SIGKILL');
          await Promise.all([batch, once(first.child, 'exit')]);
          const second = await startIngest(t.url!);
          try {
            for (const e of deliveries.slice(half + 8)) await send(second.base, e);
            // The processor retries whatever was not acknowledged.
            for (const e of events) if (!acknowledged.has((e as { id: string }).id)) await send(second.base, e);
          } finally {
            second.child.kill('SIGTERM');
            await once(second.child, 'exit');
          }
          expect(acknowledged.size).toBe(events.length);
          await same();
        },
      ),
      { numRuns: 3 },
    );
    // Some deliveries were lost with the process and delivered again.
    expect(lost).toBeGreaterThan(0);
  }, 300_000);
});
