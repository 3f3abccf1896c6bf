/**
 * The distributed pipeline end to end through a real Kafka (KAFKA_BROKERS; CI starts one with
 * scripts/kafka-broker.sh): HTTP -> Postgres + outbox -> relay -> Kafka (Avro) -> loader group ->
 * warehouse (chDB). After every scenario, faults included, the per-program, per-day figures of the
 * warehouse equal those of Postgres.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { createAvroCodec } from '../../../processors/avro/codec.js';
import type { EventLog } from '../../../processors/event-log/event-log.js';
import { createKafkaEventLog } from '../../../processors/event-log/kafka.js';
import { createRelay } from '../../../processors/relay.js';
import { createTopics, startLoaderService, startRelayService, type RunningService } from '../../../processors/services.js';
import { topicsOf } from '../../../processors/event-log/topics.js';
import { buildTestApp, unlimitedRateLimits, createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { dropTestTopics, kafkaBrokers, readTopic, testKafkaConfig, topicSizes } from '../../support/kafka.js';
import { sendTraffic, waitForSameFigures } from '../../support/pipeline.js';

const BROKERS = kafkaBrokers();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const codec = createAvroCodec();
// Real Postgres in CI (the relay's locking path); PGlite where there is none.
const kind = databaseKinds().at(-1)!;

describe.skipIf(BROKERS.length === 0)(`pipeline through real Kafka (${kind})`, () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let programs: TestProgram[];
  let dir: string;
  let real: Warehouse;
  let warehouse: Warehouse;
  let insertsDown = false;
  let kafka: ReturnType<typeof testKafkaConfig>;
  const running: RunningService[] = [];

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db, unlimitedRateLimits());
    dir = await mkdtemp(join(tmpdir(), 'ats-kafka-e2e-'));
    real = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(real);
    // The real warehouse, whose inserts fail on demand (a ClickHouse outage).
    warehouse = {
      kind: real.kind,
      insert: (table, rows, options) => (insertsDown ? Promise.reject(new Error('ClickHouse unreachable')) : real.insert(table, rows, options)),
      query: (q, p) => real.query(q, p),
      command: (q, p) => real.command(q, p),
      close: () => real.close(),
    };
  });
  afterAll(async () => {
    await app?.close();
    await real?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // Every scenario starts from empty stores: its own programs, topics and consumer group.
  beforeEach(async () => {
    kafka = testKafkaConfig(BROKERS);
    programs = [await createTestProgram(app, t.db), await createTestProgram(app, t.db, { commission_type: 'recurring_percent' })];
  });
  afterEach(async () => {
    for (const s of running.splice(0).reverse()) await s.stop();
    insertsDown = false;
    await dropTestTopics(kafka);
  });

  const loaderConfig = () => ({ groupId: kafka.groupId, flushIntervalMs: 100, minBatchBytes: 16 * 1024 });
  const startLoader = async (observer = {}) =>
    running.push(await startLoaderService({ kafka, loader: loaderConfig(), warehouse, codec, logger, observer }));
  const startRelay = async () => running.push(await startRelayService({ db: t.db, kafka, relay: { batchSize: 200, pollIntervalMs: 50 }, codec, logger }));

  /** Every figure of both stores (earlier scenarios' rows are in both), and this scenario's programs are in them. */
  async function expectSameFigures() {
    const { postgres, warehouse: seen } = await waitForSameFigures(t.db, warehouse, 90_000);
    expect(seen).toEqual(postgres);
    for (const p of programs) expect(postgres.filter((l) => l.startsWith(`sales|${p.programId}|`)).length).toBeGreaterThan(0);
  }

  it('events sent over HTTP reach the warehouse through Kafka with the same per-program, per-day figures', async () => {
    await startRelay();
    await startLoader();
    await sendTraffic(app, programs, 25);
    await expectSameFigures();
  });

  it('a ClickHouse outage during load: the loader retries, commits nothing meanwhile, and loses or doubles nothing', async () => {
    let failures = 0;
    await startRelay();
    await startLoader({ failed: () => (failures += 1) });
    const traffic = sendTraffic(app, programs, 30);
    insertsDown = true;
    await new Promise((r) => setTimeout(r, 2_500));
    insertsDown = false;
    await traffic;
    await expectSameFigures();
    expect(failures).toBeGreaterThan(0);
  });

  it('a relay that dies between publish and mark publishes again; the duplicates change no number', async () => {
    await sendTraffic(app, programs, 15);
    const log = await createKafkaEventLog(kafka, logger);
    const topics = topicsOf(codec, kafka.topicPrefix);
    const encode = (row: Parameters<typeof codec.message>[0]) => {
      const m = codec.message(row);
      return { ...m, topic: topics.name(m.topic) };
    };
    // The first relay publishes its batch, then "dies" before the mark: its transaction rolls back.
    const dying: EventLog = {
      publish: async (messages) => {
        await log.publish(messages);
        throw new Error('relay killed after publish');
      },
      close: async () => {},
    };
    await createTopics(kafka, codec, logger);
    const first = await createRelay({ db: t.db, log: dying, encode, deadLetterTopic: topics.deadLetter, batchSize: 100 }).relayOnce();
    expect(first.kind).toBe('retry');
    const republish = createRelay({ db: t.db, log, encode, deadLetterTopic: topics.deadLetter, batchSize: 100 });
    while ((await republish.relayOnce()).kind === 'ok');
    await log.close();
    const published = Object.values(await topicSizes(kafka, topics.events)).reduce((a, b) => a + b, 0);
    const [outbox] = await t.db.many<{ n: number }>(
      sql('t.e2e_outbox_of_programs', `SELECT count(*)::int AS n FROM outbox WHERE program_id = ANY ($1::bigint[])`),
      [programs.map((p) => p.programId)],
    );
    expect(published).toBeGreaterThan(outbox!.n); // the first batch is in Kafka twice
    await startLoader();
    await expectSameFigures();
  });

  it('a poison message goes to the dead-letter topic with its reason, and the loader goes on', async () => {
    await startRelay();
    await startLoader();
    const topics = topicsOf(codec, kafka.topicPrefix);
    const producer = new Kafka({ clientId: kafka.clientId, brokers: kafka.brokers, logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    await producer.send({ topic: topics.name('tracking.clicks.v1'), acks: -1, messages: [{ key: 'poison', value: Buffer.from('not avro at all') }] });
    await producer.disconnect();
    await sendTraffic(app, programs, 10);
    await expectSameFigures();
    const [letter] = await readTopic(kafka, topics.deadLetter, 1);
    const parsed = JSON.parse(letter!.toString());
    expect(parsed).toMatchObject({ stage: 'loader.decode', source: { topic: topics.name('tracking.clicks.v1') } });
    expect(parsed.reason).toMatch(/^undecodable: /);
    expect(Buffer.from(parsed.value_base64, 'base64').toString()).toBe('not avro at all');
  });
});
