import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import type { EventType } from '../../../schemas/event-contract.js';
import { createAvroCodec } from '../../../processors/avro/codec.js';
import { createInProcessLog } from '../../../processors/event-log/in-process-log.js';
import { createLoader } from '../../../processors/loader/loader.js';
import { createLogLoader } from '../../../processors/loader/log-loader.js';
import { serveMetrics } from '../../../processors/metrics/metrics-server.js';
import { createPipelineMetrics, METRIC_NAMES, startMetricsLog, type PipelineMetrics } from '../../../processors/metrics/pipeline-metrics.js';
import { createRelay } from '../../../processors/relay.js';
import { DEAD_LETTER_TOPIC } from '../../../processors/event-log/topics.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

/** A metric's values from the registry, keyed by their labels joined with '/'. */
async function values(metrics: PipelineMetrics, name: string): Promise<Record<string, number>> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) out[Object.values(v.labels).join('/') || '-'] = v.value;
  return out;
}

const q = {
  unrelayed: sql('t.metrics_unrelayed', `SELECT count(*) AS n FROM outbox WHERE relayed_at IS NULL`),
  perTopic: sql('t.metrics_per_type', `SELECT event_type, count(*) AS n FROM outbox GROUP BY event_type`),
  poison: sql(
    't.metrics_poison',
    `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     VALUES ('click.recorded', 'poison', 1, false, now(), '{"poison": true}')`,
  ),
};

describe('pipeline metrics: recording functions', () => {
  it('counters and gauges move with the recording calls, each registry on its own', async () => {
    const metrics = createPipelineMetrics({ processMetrics: false });
    const other = createPipelineMetrics({ processMetrics: false });
    metrics.recordRelayed('tracking.clicks.v1', 3);
    metrics.recordRelayed('tracking.clicks.v1');
    metrics.recordRelayed('tracking.sales.v1', 2);
    metrics.recordLoaded('tracking.sales.v1', 5);
    metrics.recordDeadLetter('tracking.sales.v1', 'loader.map');
    metrics.recordDeadLetter('tracking.sales.v1', 'loader.map', 2);
    metrics.recordDeadLetter('unknown', 'relay.encode');
    metrics.setConsumerLag('tracking.clicks.v1', 0, 120);
    metrics.setConsumerLag('tracking.clicks.v1', 0, 40);
    metrics.setConsumerLag('tracking.clicks.v1', 2, 7);
    metrics.observeBatchLoad('tracking.clicks.v1', 0.02);
    metrics.observeBatchLoad('tracking.clicks.v1', 0.3);
    metrics.recordBatchRetry('tracking.clicks.v1');

    expect(await values(metrics, METRIC_NAMES.relayed)).toEqual({ 'tracking.clicks.v1': 4, 'tracking.sales.v1': 2 });
    expect(await values(metrics, METRIC_NAMES.loaded)).toEqual({ 'tracking.sales.v1': 5 });
    expect(await values(metrics, METRIC_NAMES.deadLettered)).toEqual({ 'tracking.sales.v1/loader.map': 3, 'unknown/relay.encode': 1 });
    expect(await values(metrics, METRIC_NAMES.consumerLag)).toEqual({ 'tracking.clicks.v1/0': 40, 'tracking.clicks.v1/2': 7 });
    expect(await values(metrics, METRIC_NAMES.batchRetries)).toEqual({ 'tracking.clicks.v1': 1 });
    const text = await metrics.registry.metrics();
    expect(text).toContain(`${METRIC_NAMES.batchLoad}_count{topic="tracking.clicks.v1"} 2`);
    expect(text).toContain(`${METRIC_NAMES.batchLoad}_bucket{le="0.025",topic="tracking.clicks.v1"} 1`);
    expect(text).toContain(`${METRIC_NAMES.batchLoad}_bucket{le="0.5",topic="tracking.clicks.v1"} 2`);

    expect(await values(other, METRIC_NAMES.relayed)).toEqual({});
    // No database given: no backlog gauges.
    expect(metrics.registry.getSingleMetric(METRIC_NAMES.backlogEvents)).toBeUndefined();
  });

  it('registers the process metrics on its own registry, not on the global one', async () => {
    const metrics = createPipelineMetrics();
    const text = await metrics.registry.metrics();
    expect(text).toContain('ats_process_cpu_seconds_total');
    expect(text).toContain('ats_nodejs_eventloop_lag_seconds');
    const { register } = await import('prom-client');
    expect(register.getSingleMetric('ats_process_cpu_seconds_total')).toBeUndefined();
  });
});

describe('pipeline metrics on a real outbox (PGlite) and warehouse (chDB)', () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  let dir: string;
  let warehouse: Warehouse;
  const codec = createAvroCodec();
  const topicOf = (eventType: string) => codec.route(eventType as EventType).topic;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db);
    dir = await mkdtemp(join(tmpdir(), 'ats-metrics-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
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
      const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` });
      const clickId = click.json().click_id;
      await post('/api/v1/track/lead', { click_id: clickId, customer_key: `metrics-${i}-${Date.now()}` }, program.apiKey);
      await post('/api/v1/track/sale', { transaction_id: `metrics-${Date.now()}-${i}`, amount_cents: 2_000 + i, click_id: clickId }, program.apiKey);
    }
  }

  it('the backlog gauges read the outbox: unrelayed events and the age of the oldest, falling as the relay works', async () => {
    const metrics = createPipelineMetrics({ db: t.db, processMetrics: false });
    await history(4);
    const [unrelayed] = await t.db.many<{ n: number }>(q.unrelayed);
    expect(unrelayed!.n).toBeGreaterThan(10);
    await new Promise((resolve) => setTimeout(resolve, 50));

    const first = { events: await values(metrics, METRIC_NAMES.backlogEvents), age: await values(metrics, METRIC_NAMES.backlogAge) };
    expect(first.events).toEqual({ '-': unrelayed!.n });
    expect(first.age['-']).toBeGreaterThanOrEqual(0.05);
    expect(first.age['-']).toBeLessThan(120);

    const relay = createRelay({ db: t.db, log: createInProcessLog(), encode: codec.message, deadLetterTopic: DEAD_LETTER_TOPIC, batchSize: 5 });
    const once = await relay.relayOnce();
    expect(once).toMatchObject({ kind: 'ok', relayed: 5 });
    expect(await values(metrics, METRIC_NAMES.backlogEvents)).toEqual({ '-': unrelayed!.n - 5 });

    while ((await relay.relayOnce()).kind === 'ok');
    expect(await values(metrics, METRIC_NAMES.backlogEvents)).toEqual({ '-': 0 });
    expect(await values(metrics, METRIC_NAMES.backlogAge)).toEqual({ '-': 0 });
    // The same figures in the snapshot the log line prints.
    expect((await metrics.snapshot()).backlog).toEqual({ events: 0, oldestAgeSeconds: 0 });
  });

  it('an outbox that cannot be read makes the backlog gauges NaN for that scrape, not zero', async () => {
    const broken = { many: () => Promise.reject(new Error('connection refused')), one: () => Promise.reject(new Error('connection refused')) };
    const metrics = createPipelineMetrics({ db: broken, processMetrics: false });
    expect(await values(metrics, METRIC_NAMES.backlogEvents)).toEqual({ '-': NaN });
    // prom-client writes "Nan"; Prometheus parses NaN in any letter case.
    expect(await metrics.registry.metrics()).toMatch(new RegExp(`^${METRIC_NAMES.backlogEvents} nan$`, 'im'));
  });

  it('the instrumented event log and loader count relayed, loaded and dead-lettered events per topic', async () => {
    const metrics = createPipelineMetrics({ db: t.db, processMetrics: false });
    await history(3);
    await t.db.many(q.poison);
    const before = await t.db.many<{ event_type: string; n: number }>(
      sql('t.metrics_unrelayed_per_type', `SELECT event_type, count(*) AS n FROM outbox WHERE relayed_at IS NULL GROUP BY event_type`),
    );
    const log = createInProcessLog();
    const relay = createRelay({
      db: t.db,
      log: metrics.instrumentEventLog(log, { deadLetterTopic: DEAD_LETTER_TOPIC, topicOf }),
      encode: codec.message,
      deadLetterTopic: DEAD_LETTER_TOPIC,
    });
    while ((await relay.relayOnce()).kind === 'ok');

    const relayedWant: Record<string, number> = {};
    for (const r of before) relayedWant[topicOf(r.event_type)] = (relayedWant[topicOf(r.event_type)] ?? 0) + r.n;
    relayedWant['tracking.clicks.v1']! -= 1; // the poison row went to the dead-letter topic
    expect(await values(metrics, METRIC_NAMES.relayed)).toEqual(relayedWant);
    expect(await values(metrics, METRIC_NAMES.deadLettered)).toEqual({ 'tracking.clicks.v1/relay.encode': 1 });

    // A message the loader cannot decode, on the clicks topic.
    await log.publish([{ topic: 'tracking.clicks.v1', key: 'junk', value: Buffer.from('not avro') }]);
    const loader = createLogLoader({
      log,
      loader: metrics.instrumentLoader(createLoader({ warehouse, decode: codec.decode })),
      topics: Object.keys(relayedWant),
      deadLetterTopic: DEAD_LETTER_TOPIC,
    });
    expect((await loader.pollOnce()).kind).toBe('ok');
    expect(await values(metrics, METRIC_NAMES.loaded)).toEqual(relayedWant);
    expect(await values(metrics, METRIC_NAMES.deadLettered)).toEqual({ 'tracking.clicks.v1/relay.encode': 1, 'tracking.clicks.v1/loader.decode': 1 });
    const figures = await metrics.snapshot();
    expect(figures.batchLoads.count).toBe(Object.keys(relayedWant).length);
    expect(figures.batchLoads.retries).toBe(0);
    expect(figures.loaded).toEqual(relayedWant);
  });

  it('the Kafka loader observer records loads, retries and lag', async () => {
    const metrics = createPipelineMetrics({ processMetrics: false });
    const observer = metrics.loaderObserver();
    observer.loaded('tracking.sales.v1', 1, { kind: 'ok', nextOffset: '10', loaded: 9, messages: [], deadLetters: [
      { topic: 'tracking.sales.v1', partition: 1, offset: '3', stage: 'loader.map', reason: 'x', message: { offset: '3', value: Buffer.alloc(0) } },
    ] }, 0.2);
    observer.failed('tracking.sales.v1', 1, new Error('down'), 1);
    observer.lag('tracking.sales.v1', 1, 42);
    expect(await values(metrics, METRIC_NAMES.loaded)).toEqual({ 'tracking.sales.v1': 9 });
    expect(await values(metrics, METRIC_NAMES.deadLettered)).toEqual({ 'tracking.sales.v1/loader.map': 1 });
    expect(await values(metrics, METRIC_NAMES.batchRetries)).toEqual({ 'tracking.sales.v1': 1 });
    expect(await values(metrics, METRIC_NAMES.consumerLag)).toEqual({ 'tracking.sales.v1/1': 42 });
  });

  it('serves /metrics in the Prometheus text format and /healthz over HTTP', async () => {
    const metrics = createPipelineMetrics({ db: t.db });
    metrics.recordRelayed('tracking.clicks.v1', 2);
    const server = await serveMetrics({ registry: metrics.registry, host: '127.0.0.1', port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${server.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(metrics.registry.contentType);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const body = await res.text();
      for (const name of [METRIC_NAMES.relayed, METRIC_NAMES.loaded, METRIC_NAMES.deadLettered, METRIC_NAMES.backlogAge, METRIC_NAMES.backlogEvents, METRIC_NAMES.consumerLag, METRIC_NAMES.batchLoad]) {
        expect(body).toContain(`# TYPE ${name} `);
      }
      expect(body).toContain(`${METRIC_NAMES.relayed}{topic="tracking.clicks.v1"} 2`);
      expect(body).toContain('ats_process_resident_memory_bytes');

      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.text()).toBe('ok\n');
      expect((await fetch(`${server.url}/nothing`)).status).toBe(404);
      expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
    }
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('writes the same figures as one info log line per interval', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('info', new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
    const metrics = createPipelineMetrics({ db: t.db, processMetrics: false });
    metrics.recordRelayed('tracking.sales.v1', 7);
    metrics.recordLoaded('tracking.sales.v1', 6);
    metrics.setConsumerLag('tracking.sales.v1', 0, 3);
    const stop = startMetricsLog({ metrics, logger, intervalMs: 20 });
    const deadline = Date.now() + 10_000;
    while (lines.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    stop();
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const [unrelayed] = await t.db.many<{ n: number }>(q.unrelayed);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'pipeline figures',
      pipeline: {
        relayed: { 'tracking.sales.v1': 7 },
        loaded: { 'tracking.sales.v1': 6 },
        consumerLag: { 'tracking.sales.v1/0': 3 },
        backlog: { events: unrelayed!.n },
      },
    });
  });
});
