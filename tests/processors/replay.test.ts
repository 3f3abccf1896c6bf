import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { createLoader, type Loader } from '../../processors/loader/loader.js';
import { WAREHOUSE_TABLES } from '../../processors/loader/mappers.js';
import {
  createProgressReporter,
  createReplay,
  etaSeconds,
  formatCount,
  formatCursor,
  formatDuration,
  formatProgress,
  parseCursor,
  type ReplayDeadLetter,
} from '../../processors/replay.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { OUTBOX_AS_LOADED } from '../support/pipeline.js';

const EVENT_TABLE: Record<string, string> = {
  'click.recorded': 'click_recorded',
  'customer.changed': 'customer_changed',
  'sale.recorded': 'sale_recorded',
  'sale.status_changed': 'sale_status_changed',
  'commission.created': 'commission_created',
  'commission.reversed': 'commission_reversed',
  'platform_fee.created': 'platform_fee_created',
  'platform_fee.reversed': 'platform_fee_reversed',
  'partner_program.changed': 'partner_program_changed',
  'test_event.logged': 'test_event_logged',
  'ledger_entry.recorded': 'ledger_entry_recorded',
  'commission.approved': 'commission_approved',
  'payout.created': 'payout_created',
  'payout.paid': 'payout_paid',
  'payout.canceled': 'payout_canceled',
};

/** What the warehouse must hold, from the outbox: rows per event table, and entities per current-state table. */
const outboxFigures = sql(
  't.replay_outbox_figures',
  `SELECT event_type AS name, count(*) AS n FROM ${OUTBOX_AS_LOADED} e WHERE id <> ALL ($1::bigint[]) GROUP BY event_type
   UNION ALL
   SELECT 'customers_current', count(DISTINCT payload->>'customer_id') FROM outbox WHERE event_type = 'customer.changed' AND id <> ALL ($1::bigint[])
   UNION ALL
   SELECT 'sales_current', count(DISTINCT payload->>'sale_id') FROM outbox WHERE event_type = 'sale.recorded' AND id <> ALL ($1::bigint[])
   UNION ALL
   SELECT 'commissions_current', count(DISTINCT payload->>'commission_id') FROM outbox WHERE event_type = 'commission.created' AND id <> ALL ($1::bigint[])`,
);
const outboxTotal = sql('t.replay_outbox_total', `SELECT count(*) AS n FROM outbox`);
const poisonRow = sql(
  't.replay_poison',
  `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
   VALUES ('click.recorded', 'poison', 1, false, now(), '{"poison": true}') RETURNING id`,
);
const tableName = sql('t.replay_count', `SELECT count() AS n FROM {table:Identifier} FINAL`);
const rawTableName = sql('t.replay_raw_count', `SELECT count() AS n FROM {table:Identifier}`);

describe('replay: the warehouse rebuilt from the outbox (PGlite + chDB)', () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  let dir: string;
  let warehouse: Warehouse;
  const codec = createAvroCodec();
  /** Outbox rows left out of the expected figures (rows no schema fits). */
  const poison: number[] = [];

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db);
    dir = await mkdtemp(join(tmpdir(), 'ats-replay-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    await history(4);
    await crossDigitBoundary();
    await history(4);
  });
  afterAll(async () => {
    await app?.close();
    await warehouse?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const post = (url: string, payload: object, key?: string) =>
    app.inject({
      method: 'POST',
      url,
      headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
      payload,
    });

  /** Clicks, leads, sales (with commissions and fees), refunds and test events, through the API. */
  async function history(n: number) {
    for (let i = 0; i < n; i++) {
      const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${program.affCode}`, additional_data: { test_mode: i === 0 } });
      expect(click.statusCode).toBe(200);
      const clickId = click.json().click_id;
      expect((await post('/api/v1/track/lead', { click_id: clickId, customer_key: `replay-${i}-${Date.now()}` }, program.apiKey)).statusCode).toBe(200);
      const txn = `replay-${Date.now()}-${i}`;
      expect((await post('/api/v1/track/sale', { transaction_id: txn, amount_cents: 1_000 + i, click_id: clickId }, program.apiKey)).statusCode).toBe(200);
      if (i % 3 === 0) expect((await post('/api/v1/track/refund', { transaction_id: txn, reason: 'refund' }, program.apiKey)).statusCode).toBe(200);
    }
  }

  /**
   * Transaction ids past the next power of ten, so the outbox's txids differ in digit count: a
   * page sorted by txid as text (1460 before 998) once made the replay skip rows.
   */
  async function crossDigitBoundary() {
    const burn = sql('t.replay_burn_xid', `SELECT pg_current_xact_id()::text AS xid`);
    const start = Number((await t.db.one<{ xid: string }>(burn))!.xid);
    const boundary = 10 ** String(start).length;
    expect(boundary - start).toBeLessThan(5_000);
    for (let xid = start; xid < boundary; ) xid = Number((await t.db.one<{ xid: string }>(burn))!.xid);
  }

  async function expected(): Promise<Record<string, number>> {
    const rows = await t.db.many<{ name: string; n: number }>(outboxFigures, [poison]);
    return Object.fromEntries(rows.filter((r) => r.n > 0).map((r) => [EVENT_TABLE[r.name] ?? r.name, r.n]));
  }

  async function counts(query = tableName): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    // The event and state tables; the rollup the same loader writes is checked in warehouse.test.ts.
    for (const table of WAREHOUSE_TABLES.filter((name) => !name.startsWith('performance_'))) {
      const [row] = await warehouse.query<{ n: number }>(query, { table });
      if (row && row.n > 0) out[table] = row.n;
    }
    return out;
  }

  /**
   * Raw rows (no FINAL) of the event tables: an event is one row, so any excess is a duplicate.
   * The state tables hold a row per version until merged, so their raw counts say nothing.
   */
  async function rawEventRows(): Promise<Record<string, number>> {
    const events = new Set(Object.values(EVENT_TABLE));
    return Object.fromEntries(Object.entries(await counts(rawTableName)).filter(([table]) => events.has(table)));
  }
  async function expectedEventRows(): Promise<Record<string, number>> {
    const events = new Set(Object.values(EVENT_TABLE));
    return Object.fromEntries(Object.entries(await expected()).filter(([table]) => events.has(table)));
  }

  const replay = (pageSize = 10, loader?: Loader) => createReplay({ db: t.db, warehouse, codec, pageSize, loader });

  it('loads every outbox event into an empty warehouse: per table, the outbox figures', async () => {
    const [total] = await t.db.many<{ n: number }>(outboxTotal);
    const want = await expected();
    expect(Object.keys(want)).toEqual(expect.arrayContaining(['click_recorded', 'sale_recorded', 'commission_created', 'sale_status_changed', 'test_event_logged', 'customers_current']));
    expect(await counts()).toEqual({});

    const progress: number[] = [];
    const summary = await replay().run({ onProgress: (p) => progress.push(p.done) });

    expect(summary).toMatchObject({ complete: true, done: total!.n, total: total!.n, loaded: total!.n, deadLettered: 0, batches: Math.ceil(total!.n / 10) });
    expect(progress.at(-1)).toBe(total!.n);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(await counts()).toEqual(want);
    // No duplicate rows at all: the raw rows are the FINAL ones.
    expect(await rawEventRows()).toEqual(await expectedEventRows());
  });

  it('run again, it changes no number: the same pages carry the same insert tokens', async () => {
    const before = await rawEventRows();
    const summary = await replay().run();
    expect(summary.complete).toBe(true);
    // Raw rows unchanged: every block was dropped by its token (merges never remove a row that is not a duplicate).
    expect(await rawEventRows()).toEqual(before);
    expect(await counts()).toEqual(await expected());
  });

  it('interrupted after some batches, then run again from the start: the counts equal the outbox, no duplicate row', async () => {
    const controller = new AbortController();
    const stopped = await replay(7).run({
      truncate: true,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.batches === 3) controller.abort();
      },
    });
    expect(stopped).toMatchObject({ complete: false, batches: 3, done: 21 });
    const partial = Object.values(await counts()).reduce((s, n) => s + n, 0);
    expect(partial).toBeGreaterThan(0);
    expect(await counts()).not.toEqual(await expected());

    const again = await replay(7).run();
    expect(again).toMatchObject({ complete: true, done: again.total });
    expect(await counts()).toEqual(await expected());
    expect(await rawEventRows()).toEqual(await expectedEventRows());
  });

  it('interrupted, then resumed after its cursor: the rest loads and the counts equal the outbox', async () => {
    const controller = new AbortController();
    const stopped = await replay(6).run({
      truncate: true,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.batches === 2) controller.abort();
      },
    });
    expect(stopped.complete).toBe(false);
    const cursor = parseCursor(formatCursor(stopped.cursor));
    expect(cursor).toEqual(stopped.cursor);

    const starts: number[] = [];
    const resumed = await replay(6).run({ after: cursor, onStart: (p) => starts.push(p.done) });
    expect(starts).toEqual([stopped.done]);
    expect(resumed.done).toBe(resumed.total);
    expect(resumed.loaded).toBe(resumed.total - stopped.done);
    expect(await counts()).toEqual(await expected());
    expect(await rawEventRows()).toEqual(await expectedEventRows());
  });

  it('a warehouse that fails a batch is retried; one that keeps failing stops the replay with the cursor to resume from', async () => {
    const real = createLoader({ warehouse, decode: codec.decode });
    let failures = 1;
    const flaky: Loader = {
      load: (batch) => (failures-- > 0 ? Promise.resolve({ kind: 'retry', error: new Error('warehouse unreachable'), messages: [] }) : real.load(batch)),
    };
    const retried = await createReplay({ db: t.db, warehouse, codec, pageSize: 50, loader: flaky, retryDelayMs: 1 }).run({ truncate: true });
    expect(retried.complete).toBe(true);
    expect(await counts()).toEqual(await expected());

    const down: Loader = { load: async () => ({ kind: 'retry', error: new Error('warehouse unreachable'), messages: [] }) };
    const failing = createReplay({ db: t.db, warehouse, codec, pageSize: 50, loader: down, retryDelayMs: 1, maxAttempts: 2 });
    await expect(failing.run()).rejects.toThrow(/refused a replay batch 2 times \(warehouse unreachable\); resume with the cursor 0:0/);
  });

  it('a row no schema fits is reported as a dead letter with its outbox id, and every other event loads', async () => {
    const row = await t.db.one<{ id: number }>(poisonRow);
    poison.push(row!.id);
    await history(1);
    const dead: ReplayDeadLetter[] = [];
    const summary = await replay(25).run({ truncate: true, onDeadLetter: (d) => dead.push(d) });
    expect(dead).toEqual([{ stage: 'relay.encode', outboxId: row!.id, eventType: 'click.recorded', reason: expect.stringContaining('click.recorded') }]);
    expect(summary).toMatchObject({ complete: true, deadLettered: 1, loaded: summary.total - 1 });
    expect(await counts()).toEqual(await expected());
  });
});

describe('replay progress: bar, rate and ETA', () => {
  it('formats counts, durations and the ETA', () => {
    expect(formatCount(0)).toBe('0');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1_234_567)).toBe('1,234,567');
    expect(formatDuration(0)).toBe('0:00');
    expect(formatDuration(65)).toBe('1:05');
    expect(formatDuration(3_600 + 2 * 60 + 3)).toBe('1:02:03');
    expect(formatDuration(Infinity)).toBe('--:--');
    expect(etaSeconds({ done: 250, total: 1_000, rate: 50 })).toBe(15);
    expect(etaSeconds({ done: 0, total: 1_000, rate: 0 })).toBe(Infinity);
    expect(etaSeconds({ done: 1_000, total: 1_000, rate: 0 })).toBe(0);
  });

  it('draws the bar with done/total, percent, rate and ETA; the elapsed time once done', () => {
    expect(formatProgress({ done: 4_500, total: 10_000, rate: 1_200, elapsedSeconds: 4 }, { width: 20 })).toBe(
      '[#########...........]  45.0%  4,500/10,000 events  1,200 events/s  ETA 0:05',
    );
    expect(formatProgress({ done: 10_000, total: 10_000, rate: 1_000, elapsedSeconds: 75 }, { width: 10, label: 'replay' })).toBe(
      'replay [##########] 100.0%  10,000/10,000 events  1,000 events/s  done in 1:15',
    );
    expect(formatProgress({ done: 0, total: 0, rate: 0, elapsedSeconds: 0 }, { bar: false })).toBe('100.0%  0/0 events  0 events/s  done in 0:00');
    expect(formatProgress({ done: 10, total: 100, rate: 0, elapsedSeconds: 0 }, { bar: false })).toContain('ETA --:--');
  });

  it('on a terminal redraws one line in place; otherwise writes a line per interval', () => {
    let clock = 0;
    const ttyOut: string[] = [];
    const tty = createProgressReporter({ stream: { isTTY: true, write: (s) => ttyOut.push(s) }, now: () => clock, redrawMs: 100 });
    const logOut: string[] = [];
    const log = createProgressReporter({ stream: { write: (s) => logOut.push(s) }, now: () => clock, logEveryMs: 5_000, label: 'replay' });
    for (let done = 0; done <= 10_000; done += 500) {
      tty.update(done, 10_000);
      log.update(done, 10_000);
      clock += 1_000; // 500 events per second
    }
    tty.finish(10_000, 10_000);
    log.finish(10_000, 10_000);

    expect(ttyOut.length).toBe(22);
    expect(ttyOut.every((s) => s.startsWith('\r\x1b[2K'))).toBe(true);
    expect(ttyOut.slice(0, -1).every((s) => !s.includes('\n'))).toBe(true);
    expect(ttyOut.at(-1)!.endsWith('\n')).toBe(true);
    expect(ttyOut[10]).toContain('5,000/10,000 events  500 events/s  ETA 0:10');

    // One line at the start, then one every 5 s, and the final one.
    expect(logOut.length).toBe(1 + 4 + 1);
    expect(logOut.every((s) => !s.includes('\r') && s.startsWith('replay ') && s.endsWith('\n'))).toBe(true);
    expect(logOut[1]).toContain('2,500/10,000 events  500 events/s  ETA 0:15');
    expect(logOut.at(-1)).toContain('10,000/10,000 events  476 events/s  done in 0:21');
  });
});
