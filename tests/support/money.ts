/**
 * Helpers of the money tests (issue 34): a program with its hold, sales through /track/sale,
 * refunds, and the money surface's calls as the owner or the member.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { sql, type Database, type NamedQuery } from '../../core/db.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from './app.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './databases.js';
import { charge, checkoutSession, deliver, event, id } from './processor.js';

/**
 * The money tests' setup, for one describe block: a database of `kind` and the app on it, made
 * before its tests and closed and dropped after them. `db` and `app` are read inside a test (they
 * exist once beforeAll ran); get and post are the calls the tests send.
 */
export function moneyTestApp(kind: DatabaseKind) {
  let t: TestDatabase | undefined;
  let app: FastifyInstance | undefined;
  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });
  return {
    get db(): Database {
      return t!.db;
    },
    /** The database's URL on Postgres (undefined on PGlite), for a process of its own. */
    get url(): string | undefined {
      return t!.url;
    },
    get app(): FastifyInstance {
      return app!;
    },
    get: (url: string, headers: Record<string, string>) => app!.inject({ method: 'GET', url, headers }),
    post: (url: string, headers: Record<string, string>, payload: object = {}) => app!.inject({ method: 'POST', url, headers, payload }),
  };
}

export interface MoneyProgram extends TestProgram {
  owner: Record<string, string>;
  member: Record<string, string>;
  base: string;
}

/** A program (percent 10 unless given) with its hold and payout minimum set through the money surface. */
export async function moneyProgram(
  app: FastifyInstance,
  db: Database,
  o: { holdDays?: number; minimum?: number; settings?: Record<string, unknown> } = {},
): Promise<MoneyProgram> {
  const program = await createTestProgram(app, db, { commission_type: 'percent', commission_rate: 10, ...o.settings });
  const owner = { authorization: `Bearer ${program.workspace.ownerToken}` };
  const member = { authorization: `Bearer ${program.workspace.memberToken}` };
  const base = `/api/tracking/programs/${program.programId}`;
  const res = await app.inject({
    method: 'PATCH',
    url: `${base}/payout-settings`,
    headers: owner,
    payload: { commission_hold_days: o.holdDays ?? 30, payout_minimum_minor: o.minimum ?? 5_000 },
  });
  if (res.statusCode !== 200) throw new Error(`payout settings answered ${res.statusCode}: ${res.body}`);
  return { ...program, owner, member, base };
}

let serial = 0;
/** A new customer through a click of the program's link: its click id. */
export async function newClick(app: FastifyInstance, p: TestProgram): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/track/click',
    headers: { 'x-forwarded-for': freshIp() },
    payload: { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` },
  });
  if (res.statusCode !== 200) throw new Error(`click answered ${res.statusCode}: ${res.body}`);
  return res.json().click_id as string;
}

export interface SaleMade {
  transactionId: string;
  saleId: string;
  commissionId: string;
}

/** A converting sale of a new customer (its commission: 10 % of amount), through /track/sale. */
export async function sale(app: FastifyInstance, p: TestProgram, amountCents: number, currency = 'USD'): Promise<SaleMade> {
  serial += 1;
  const transactionId = `txn-money-${Date.now()}-${serial}-${Math.random().toString(36).slice(2, 8)}`;
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/track/sale',
    headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
    payload: { transaction_id: transactionId, amount_cents: amountCents, currency, click_id: await newClick(app, p) },
  });
  if (res.statusCode !== 200) throw new Error(`sale answered ${res.statusCode}: ${res.body}`);
  const body = res.json();
  return { transactionId, saleId: body.data.sale_id, commissionId: body.data.commission.commission_id };
}

/** A full refund or chargeback through /track/refund. */
export function refund(app: FastifyInstance, p: TestProgram, transactionId: string, reason: 'refund' | 'chargeback' = 'refund') {
  return app.inject({
    method: 'POST',
    url: '/api/v1/track/refund',
    headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
    payload: { transaction_id: transactionId, reason },
  });
}

/** The commission of a sale: its state and payout as reads show them (commission_state), its stored status and amount. */
export async function commissionOf(db: Database, transactionId: string) {
  return (await db.one<{ id: string; status: string; stored: string; amount_cents: number; payout_id: string | null }>(
    sql(
      't.money_commission',
      `SELECT c.id, commission_state(c) AS status, c.status AS stored, c.amount_cents,
              COALESCE(c.payout_id, CASE WHEN c.status = 'approved' THEN commission_payout(c) END) AS payout_id
         FROM commissions c JOIN sale_events s ON s.id = c.sale_id WHERE s.transaction_id = $1`,
    ),
    [transactionId],
  ))!;
}

/** Ends the hold of the program's pending commissions now (available_at moved to the past), as time passing would. */
export async function endHolds(db: Database, programId: number): Promise<void> {
  await db.many(sql('t.money_end_holds', `UPDATE commissions SET available_at = now() - interval '1 second' WHERE program_id = $1 AND status = 'pending'`), [programId]);
}

export interface Entry {
  kind: string;
  amount_minor: number;
  cause: string;
  currency: string;
  commission_id: string | null;
}

/** The program's ledger entries, as stored, oldest first. */
export async function entries(db: Database, programId: number): Promise<Entry[]> {
  const rows = await db.many<Entry>(
    sql('t.money_entries', `SELECT kind, amount_minor, cause, currency, commission_id FROM ledger_entries WHERE program_id = $1 ORDER BY id`),
    [programId],
  );
  return rows.map((r) => ({ ...r, amount_minor: Number(r.amount_minor) }));
}

/** Outbox events of a type for the program. */
export async function eventsOf(db: Database, programId: number, type: string): Promise<Record<string, unknown>[]> {
  const rows = await db.many<{ payload: Record<string, unknown> }>(
    sql('t.money_events', `SELECT payload FROM outbox WHERE program_id = $1 AND event_type = $2 ORDER BY id`),
    [programId, type],
  );
  return rows.map((r) => r.payload);
}

/** Row counts of the money tables, to show a refused call wrote nothing. */
export async function moneyCounts(db: Database) {
  return db.one(
    sql(
      't.money_counts',
      `SELECT (SELECT count(*) FROM ledger_entries)::int AS entries, (SELECT count(*) FROM payouts)::int AS payouts,
              (SELECT count(*) FROM payout_runs)::int AS runs, (SELECT count(*) FROM ledger_settlements)::int AS settlements,
              (SELECT count(*) FROM outbox)::int AS outbox, (SELECT count(*) FROM partner_payout_methods)::int AS methods,
              (SELECT string_agg(id || ':' || status || ':' || amount_cents, ',' ORDER BY id) FROM commissions) AS commissions,
              (SELECT string_agg(id || ':' || commission_hold_days || ':' || payout_minimum_minor, ',' ORDER BY id) FROM programs) AS settings`,
    ),
  );
}

/** A month of one partner: sales, a partial refund before payment, a payout paid, a chargeback after it, a bonus. */
export async function wholeMonth(app: FastifyInstance, p: MoneyProgram) {
  const post = (url: string, payload: object = {}) => app.inject({ method: 'POST', url, headers: p.owner, payload });
  await sale(app, p, 30_000);
  const s2 = await sale(app, p, 50_000);
  const session = checkoutSession({ metadata: { program_id: String(p.programId), svc_click_id: await newClick(app, p) } });
  await deliver(app, event('checkout.session.completed', session));
  await deliver(app, event('charge.refunded', charge({ id: id('ch'), payment_intent: session.payment_intent as string, amount: 5_000, amount_refunded: 1_000 })));
  const [payout] = (await post(`${p.base}/payouts`)).json().data.payouts;
  await post(`${p.base}/payouts/${payout.id}/mark-paid`, { reference: 'WISE-BATCH-1' });
  await refund(app, p, s2.transactionId, 'chargeback');
  await post(`${p.base}/partners/${p.partnerId}/adjustments`, { amount_minor: 200, currency: 'USD', reason: 'Holiday bonus' });
  return payout as { amount_minor: number };
}

/**
 * Every event type of the ledger and payouts, once at least (for the contract tests): a commission
 * approved by its owner (commission.approved), its ledger entries (ledger_entry.recorded), a payout
 * created and canceled, then created again and paid (payout.created, payout.canceled, payout.paid),
 * and a commission a fraud rule holds (commission.held, issue 31).
 */
export async function everyMoneyEvent(app: FastifyInstance, db: Database) {
  const p = await moneyProgram(app, db, { holdDays: 30, minimum: 100 });
  const post = async (url: string, payload: object = {}) => {
    const res = await app.inject({ method: 'POST', url, headers: p.owner, payload });
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
    return res.json().data;
  };
  const s = await sale(app, p, 30_000);
  await post(`${p.base}/commissions/${s.commissionId}/approve`, { reason: 'Known customer' });
  const [first] = (await post(`${p.base}/payouts`)).payouts;
  await post(`${p.base}/payouts/${first.id}/cancel`);
  const [second] = (await post(`${p.base}/payouts`)).payouts;
  await post(`${p.base}/payouts/${second.id}/mark-paid`, { reference: 'BATCH-9' });
  // Issue 31: a sale a few milliseconds after its click, under fast_conversion: commission.held.
  await sale(app, await moneyProgram(app, db, { settings: { fraud_rules: { fast_conversion: true } } }), 10_000);
  return p;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME = /^\d{4}-\d\d-\d\dT/;

/**
 * For the tests that compare a batch's fast path with its one-by-one function (sale-batches,
 * refund-batches): a value with what differs between two programs given the same cases replaced.
 * Ids, clicks and `txn-money-` transaction ids by their order of first appearance; times; numeric
 * ids, rule versions and a held payment's seconds after its click by their type; aggregate keys and
 * causes by their kind and normalized id; the program's own prefix removed from other strings.
 */
export function normalizer(prefix: string) {
  const ids = new Map<string, string>();
  const walk = (v: unknown, key = ''): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === 'number' && (key === 'id' || key.endsWith('_id') || key === 'rule_version' || key === 'seconds')) return 'number';
    if (['program_id', 'partner_id', 'entry_id'].includes(key)) return typeof v;
    if (typeof v !== 'string') return v;
    if (key === 'aggregate_key' && /^\d+$/.test(v)) return 'number';
    if (UUID.test(v) || v.startsWith('txn-money-')) {
      if (!ids.has(v)) ids.set(v, `id${ids.size + 1}`);
      return ids.get(v);
    }
    if (TIME.test(v)) return 'time';
    const keyed = /^(sale|customer|partner|refund):(.+)$/.exec(v);
    if (keyed) return `${keyed[1]}:${/^\d+$/.test(keyed[2]!) ? 'number' : walk(keyed[2])}`;
    return v.replaceAll(prefix, '');
  };
  return walk;
}

/**
 * The same cases two ways, for the tests of a batch's fast path: two programs made alike, each given
 * the same cases; the first program's items in one call of `batch` ($1: the items; its row's
 * `results`), the second's in one call of `one` per item ($1: the item; its row's `result`),
 * answered as record_batch answers (`{ok}`, or `{refused, hint}` for a refusal raised). `since`:
 * the last outbox id before either ran; `answers`: both answers, normalized (normalizer).
 */
export async function batchAndOneByOne(
  app: FastifyInstance,
  db: Database,
  options: Parameters<typeof moneyProgram>[2],
  cases: (p: MoneyProgram, prefix: string) => Promise<object[]>,
  statements: { batch: NamedQuery; one: NamedQuery },
) {
  const byBatch = await moneyProgram(app, db, options);
  const oneByOne = await moneyProgram(app, db, options);
  const batchItems = await cases(byBatch, `${byBatch.programId}-`);
  const oneItems = await cases(oneByOne, `${oneByOne.programId}-`);
  const since = Number((await db.one<{ id: string }>(sql('t.money_last_event', 'SELECT COALESCE(max(id), 0) AS id FROM outbox')))!.id);
  const batchAnswers = (await db.one<{ results: unknown[] }>(statements.batch, [JSON.stringify(batchItems)]))!.results;
  const oneAnswers: unknown[] = [];
  for (const item of oneItems) {
    oneAnswers.push(
      await db.one<{ result: unknown }>(statements.one, [JSON.stringify(item)]).then(
        (row) => ({ ok: row!.result }),
        (error: { detail?: string; hint?: string }) => ({ refused: error.detail, hint: error.hint || null }),
      ),
    );
  }
  return {
    byBatch,
    oneByOne,
    since,
    batchAnswers,
    answers: { byBatch: normalizer(`${byBatch.programId}-`)(batchAnswers), oneByOne: normalizer(`${oneByOne.programId}-`)(oneAnswers) },
  };
}
