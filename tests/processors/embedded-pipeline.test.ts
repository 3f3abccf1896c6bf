import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { createLogger } from '../../core/log.js';
import { DEAD_LETTER_TOPIC, startEmbeddedPipeline } from '../../processors/embedded-pipeline.js';
import { createLoader } from '../../processors/loader/loader.js';
import { createLoadingLog } from '../../processors/loader/loading-log.js';
import { createRelay } from '../../processors/relay.js';
import { buildTestApp, unlimitedRateLimits, createTestProgram, freshIp, type TestProgram } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { OUTBOX_AS_LOADED, sendTraffic, waitForSameFigures } from '../support/pipeline.js';

/** Events per type in the outbox, and the same read from the warehouse (duplicates folded by FINAL). */
const outboxCounts = sql('t.embedded_outbox', `SELECT event_type, count(*) AS n FROM ${OUTBOX_AS_LOADED} e GROUP BY event_type`);
const WAREHOUSE_TABLE: Record<string, string> = {
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
  'sale.partially_refunded': 'sale_partially_refunded',
  'commission.adjusted': 'commission_adjusted',
  'platform_fee.adjusted': 'platform_fee_adjusted',
  'ledger_entry.recorded': 'ledger_entry_recorded',
  'commission.approved': 'commission_approved',
  'payout.created': 'payout_created',
  'payout.paid': 'payout_paid',
  'payout.canceled': 'payout_canceled',
};

describe('embedded pipeline: outbox, relay and loader into chDB in one process', () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  let dir: string;
  let warehouse: Warehouse;
  let down = false;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db, unlimitedRateLimits());
    program = await createTestProgram(app, t.db);
    dir = await mkdtemp(join(tmpdir(), 'ats-embedded-'));
    const real = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(real);
    // The real warehouse, made unreachable on demand.
    warehouse = {
      ...real,
      kind: real.kind,
      insert: (table, rows, options) => (down ? Promise.reject(new Error('warehouse unreachable')) : real.insert(table, rows, options)),
      query: (q, p) => real.query(q, p),
      command: (q, p) => real.command(q, p),
      close: () => real.close(),
    };
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

  async function history(n: number) {
    for (let i = 0; i < n; i++) {
      const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${program.affCode}`, additional_data: { test_mode: i === 0 } });
      const clickId = click.json().click_id;
      await post('/api/v1/track/lead', { click_id: clickId, customer_key: `emb-${n}-${i}-${Date.now()}` }, program.apiKey);
      const txn = `emb-${Date.now()}-${n}-${i}`;
      await post('/api/v1/track/sale', { transaction_id: txn, amount_cents: 1_000 + i, click_id: clickId }, program.apiKey);
      if (i % 3 === 0) await post('/api/v1/track/refund', { transaction_id: txn, reason: i % 2 ? 'refund' : 'chargeback' }, program.apiKey);
    }
  }

  async function warehouseCounts(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const [eventType, table] of Object.entries(WAREHOUSE_TABLE)) {
      const [row] = await warehouse.query<{ n: number }>(sql(`t.embedded_count_${table}`, `SELECT count() AS n FROM ${table} FINAL`));
      if (row && row.n > 0) counts[eventType] = row.n;
    }
    return counts;
  }

  async function expectedCounts(): Promise<Record<string, number>> {
    const rows = await t.db.many<{ event_type: string; n: number }>(outboxCounts);
    return Object.fromEntries(rows.map((r) => [r.event_type, r.n]));
  }

  function pipeline() {
    const codec = createAvroCodec();
    const deadLetters: string[] = [];
    const log = createLoadingLog({
      loader: createLoader({ warehouse, decode: codec.decode }),
      deadLetterTopic: DEAD_LETTER_TOPIC,
      reportDeadLetter: (_topic, reason) => deadLetters.push(reason),
    });
    return { relay: createRelay({ db: t.db, log, encode: codec.message, deadLetterTopic: DEAD_LETTER_TOPIC, batchSize: 25 }), deadLetters };
  }

  it('every committed event reaches the warehouse once, and only then is it marked relayed', async () => {
    await history(6);
    const { relay, deadLetters } = pipeline();
    while ((await relay.relayOnce()).kind === 'ok');
    expect(await warehouseCounts()).toEqual(await expectedCounts());
    expect(deadLetters).toEqual([]);
    const [pending] = await t.db.many<{ n: number }>(sql('t.embedded_pending', `SELECT count(*) AS n FROM outbox WHERE relayed_at IS NULL`));
    expect(pending!.n).toBe(0);
  });

  it('while the warehouse is down nothing is marked; after it returns, the backlog loads with nothing lost or doubled', async () => {
    await history(4);
    const { relay } = pipeline();
    down = true;
    const failed = await relay.relayOnce();
    expect(failed.kind).toBe('retry');
    const [pending] = await t.db.many<{ n: number }>(sql('t.embedded_pending_down', `SELECT count(*) AS n FROM outbox WHERE relayed_at IS NULL`));
    expect(pending!.n).toBeGreaterThan(0);
    down = false;
    while ((await relay.relayOnce()).kind === 'ok');
    expect(await warehouseCounts()).toEqual(await expectedCounts());
  });

  it('the embedded pipeline as npm start runs it: events over HTTP give the same per-program, per-day figures in the warehouse as in Postgres', async () => {
    const programs = [program, await createTestProgram(app, t.db, { commission_type: 'recurring_fixed', commission_rate: 300 })];
    const running = startEmbeddedPipeline({ db: t.db, warehouse, codec: createAvroCodec(), logger: createLogger('silent'), pollIntervalMs: 20 });
    try {
      await sendTraffic(app, programs, 20);
      const { postgres, warehouse: seen } = await waitForSameFigures(t.db, warehouse, 60_000);
      expect(seen).toEqual(postgres);
      expect(postgres.filter((l) => l.startsWith(`sales|${programs[1]!.programId}|`)).length).toBeGreaterThan(0);
    } finally {
      await running.stop();
    }
  });

  it('the relay loop drains the backlog and stops cleanly', async () => {
    await history(2);
    const { relay } = pipeline();
    const loop = relay.start({ intervalMs: 20 });
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const [pending] = await t.db.many<{ n: number }>(sql('t.embedded_pending_loop', `SELECT count(*) AS n FROM outbox WHERE relayed_at IS NULL`));
      if (pending!.n === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await loop.stop();
    expect(await warehouseCounts()).toEqual(await expectedCounts());
  });
});
