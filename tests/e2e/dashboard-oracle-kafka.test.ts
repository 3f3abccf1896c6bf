import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/log.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { createKafkaEventLog } from '../../processors/event-log/kafka.js';
import { createRelay } from '../../processors/relay.js';
import { createTopics, startLoaderService, type RunningService } from '../../processors/services.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import { buildTestApp } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { dropTestTopics, kafkaBrokers, testKafkaConfig, waitForGroupCaughtUp } from '../support/kafka.js';
import { relayEverything, runPerformanceOracle, type Deliver } from '../support/oracle.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse } from '../support/warehouses.js';

/*
 * The performance oracle of tests/e2e/dashboard-oracle.test.ts, delivered through the distributed path:
 * relay -> real Kafka (Avro) -> the loaders' consumer group -> warehouse (chDB, and the ClickHouse
 * server over HTTP when CLICKHOUSE_TEST_URL is set). Replay a failure with ORACLE_SEED=<seed in the test name>.
 */
const BROKERS = kafkaBrokers();
const SEED = process.env.ORACLE_SEED ? Number(process.env.ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);
const kind = databaseKinds().at(-1)!;
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

describe.skipIf(BROKERS.length === 0).each(warehouseKinds())(`performance oracle on ${kind} and the %s warehouse, through real Kafka`, (warehouseKind) => {
  const codec = createAvroCodec();
  const kafka = testKafkaConfig(BROKERS);
  const topics = topicsOf(codec, kafka.topicPrefix);
  let wh: TestWarehouse;
  let t: TestDatabase;
  let app: FastifyInstance;
  let loader: RunningService;
  let now: number | undefined;

  beforeAll(async () => {
    wh = await createTestWarehouse(warehouseKind);
    // Duplicates stay as rows, as on a real server between merges: only FINAL keeps them from counting twice.
    await wh.stopMerges();
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db, undefined, () => now ?? Date.now(), wh.warehouse);
    await createTopics(kafka, codec, logger);
    loader = await startLoaderService({
      kafka,
      loader: { groupId: kafka.groupId, flushIntervalMs: 50, minBatchBytes: 1 },
      warehouse: wh.warehouse,
      codec,
      logger,
    });
  });
  afterAll(async () => {
    await loader?.stop();
    await app?.close();
    await t?.drop();
    await wh?.drop();
    await dropTestTopics(kafka);
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
