import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { createKafkaEventLog } from '../../processors/event-log/kafka.js';
import { createRelay } from '../../processors/relay.js';
import { createTopics, startLoaderService, type RunningService } from '../../processors/services.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import { buildTestApp } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { dropTestTopics, kafkaBrokers, testKafkaConfig, waitForGroupCaughtUp } from '../support/kafka.js';
import { relayEverything, runPerformanceOracle, type Deliver } from '../support/oracle.js';

/*
 * The performance oracle of tests/e2e/dashboard-oracle.test.ts, delivered through the distributed path:
 * relay -> real Kafka (Avro) -> the loaders' consumer group -> warehouse. Replay a failure with
 * ORACLE_SEED=<seed in the test name>.
 */
const BROKERS = kafkaBrokers();
const SEED = process.env.ORACLE_SEED ? Number(process.env.ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);
const kind = databaseKinds().at(-1)!;
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

describe.skipIf(BROKERS.length === 0)(`performance oracle on ${kind}, through real Kafka`, () => {
  const codec = createAvroCodec();
  const kafka = testKafkaConfig(BROKERS);
  const topics = topicsOf(codec, kafka.topicPrefix);
  let dir: string;
  let warehouse: Warehouse;
  let t: TestDatabase;
  let app: FastifyInstance;
  let loader: RunningService;
  let now: number | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-oracle-kafka-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    // Duplicates stay as rows, as on a real server between merges: only FINAL keeps them from counting twice.
    await warehouse.command(sql('t.oracle_kafka_stop_merges', 'SYSTEM STOP MERGES'));
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db, undefined, () => now ?? Date.now(), warehouse);
    await createTopics(kafka, codec, logger);
    loader = await startLoaderService({
      kafka,
      loader: { groupId: kafka.groupId, flushIntervalMs: 50, minBatchBytes: 1 },
      warehouse,
      codec,
      logger,
    });
  });
  afterAll(async () => {
    await loader?.stop();
    await app?.close();
    await t?.drop();
    await warehouse?.close();
    await dropTestTopics(kafka);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(`the warehouse's answers equal the Postgres reference (seed ${SEED})`, { timeout: 300_000 }, async () => {
    const log = await createKafkaEventLog(kafka, logger);
    const deliver: Deliver = async (db) => {
      const relay = createRelay({
        db,
        log,
        encode: (row) => {
          const m = codec.message(row);
          return { ...m, topic: topics.name(m.topic) };
        },
        deadLetterTopic: topics.deadLetter,
        batchSize: 50,
      });
      await relayEverything(db, relay, (result) => {
        if (result.kind === 'ok' && result.deadLettered > 0) throw new Error(`${result.deadLettered} rows dead-lettered`);
      });
      await waitForGroupCaughtUp(kafka, topics.events);
    };
    try {
      const compared = await runPerformanceOracle({
        app,
        db: t.db,
        deliver,
        setNow: (ms) => {
          now = ms;
        },
        seed: SEED,
        histories: 2,
        steps: 45,
      });
      expect(compared).toBeGreaterThan(0);
    } finally {
      await log.close();
    }
  });
});
