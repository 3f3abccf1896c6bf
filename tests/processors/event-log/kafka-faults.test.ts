/**
 * Process-level faults of the distributed pipeline, each ending with the warehouse's per-program,
 * per-day figures equal to Postgres: the loader process killed with SIGKILL mid-load and started
 * again, and the Kafka broker stopped and restarted while traffic flows. The broker test runs its
 * own broker (scripts/kafka-broker.sh with its own state dir and ports), never the shared one.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse } from '../../../core/warehouse.js';
import { createAvroCodec } from '../../../processors/avro/codec.js';
import { startLoaderService, startRelayService, type RunningService } from '../../../processors/services.js';
import { topicsOf } from '../../../processors/event-log/topics.js';
import { buildTestApp, unlimitedRateLimits, createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { dropTestTopics, kafkaBrokers, testKafkaConfig } from '../../support/kafka.js';
import { postgresFigures, sendTraffic, waitForSameFigures, warehouseFigures } from '../../support/pipeline.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const BROKERS = kafkaBrokers();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const codec = createAvroCodec();
const kind = databaseKinds().at(-1)!;
const run = promisify(execFile);

const freePort = () =>
  new Promise<number>((ok, fail) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))));
    });
  });

// Each test starts a fresh warehouse behind fresh topics, so it relays the whole outbox again.
const relayAgain = sql('t.faults_relay_again', `UPDATE outbox SET relayed_at = NULL`);
const unrelayed = sql('t.faults_unrelayed', `SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL`);

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(BROKERS.length === 0)(`pipeline faults through real Kafka (${kind})`, () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let programs: TestProgram[];

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db, unlimitedRateLimits());
    programs = [await createTestProgram(app, t.db), await createTestProgram(app, t.db, { commission_type: 'fixed', commission_rate: 250 })];
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('a loader killed with SIGKILL mid-load and started again loses and doubles nothing', async () => {
    const kafka = testKafkaConfig(BROKERS);
    const dir = await mkdtemp(join(tmpdir(), 'ats-loader-kill-'));
    const children: ChildProcess[] = [];
    await t.db.many(relayAgain);
    const relay = await startRelayService({ db: t.db, kafka, relay: { batchSize: 100, pollIntervalMs: 50 }, codec, logger });
    try {
      await sendTraffic(app, programs, 40);
      await until('the relay to drain the outbox', async () => (await t.db.one<{ n: number }>(unrelayed))!.n === 0, 60_000);

      const loader = () => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', 'loader'], {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: process.env.HOME ?? '/tmp',
            KAFKA_BROKERS: kafka.brokers.join(','),
            KAFKA_TOPIC_PREFIX: kafka.topicPrefix,
            LOADER_GROUP_ID: kafka.groupId,
            LOADER_FLUSH_MS: '50',
            LOADER_MIN_BATCH_BYTES: '1',
            DATA_DIR: dir,
            LOG_LEVEL: 'debug',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        children.push(child);
        let output = '';
        child.stdout!.on('data', (d) => (output += d));
        child.stderr!.on('data', (d) => (output += d));
        const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
        return { child, exited, output: () => output };
      };

      // First life: killed right after its first batch was committed, with more batches queued behind it.
      const first = loader();
      await until('the first loaded batch', async () => first.output().includes('"msg":"batch loaded"'), 60_000).catch((error) => {
        throw new Error(`${error.message}; the loader printed:\n${first.output().slice(-3000)}`);
      });
      first.child.kill('SIGKILL');
      expect(await first.exited).toBeNull();
      await sendTraffic(app, programs, 10); // traffic goes on while no loader runs

      // Second life: catches up from the committed offsets, then drains and exits cleanly on SIGTERM.
      const second = loader();
      const admin = new Kafka({ clientId: kafka.clientId, brokers: kafka.brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const topics = topicsOf(codec, kafka.topicPrefix).events;
      await until(
        'the restarted loader to commit every offset',
        async () => {
          if ((await t.db.one<{ n: number }>(unrelayed))!.n > 0) return false;
          for (const topic of topics) {
            const high = await admin.fetchTopicOffsets(topic);
            const [group] = await admin.fetchOffsets({ groupId: kafka.groupId, topics: [topic] });
            for (const p of high) {
              const committed = group?.partitions.find((g) => g.partition === p.partition)?.offset ?? '-1';
              if (Number(p.high) > 0 && Number(committed) < Number(p.high)) return false;
            }
          }
          return true;
        },
        90_000,
      );
      await admin.disconnect();
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);

      const warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
      try {
        await migrateWarehouse(warehouse);
        // This test's topics carry every event of the database, so the figures are the whole database's.
        expect(await warehouseFigures(warehouse)).toEqual(await postgresFigures(t.db));
      } finally {
        await warehouse.close();
      }
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await relay.stop();
      await dropTestTopics(kafka);
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('the broker stopped and restarted during load: relay and loader resume, nothing lost or doubled', async () => {
    const state = await mkdtemp(join(tmpdir(), 'ats-own-broker-'));
    const port = await freePort();
    const env = {
      ...process.env,
      KAFKA_STATE_DIR: state,
      KAFKA_PORT: String(port),
      KAFKA_CONTROLLER_PORT: String(await freePort()),
    };
    const broker = (command: 'start' | 'stop') => run('bash', ['scripts/kafka-broker.sh', command], { cwd: ROOT, env, timeout: 180_000 });
    const dir = await mkdtemp(join(tmpdir(), 'ats-broker-restart-'));
    const warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    const kafka = testKafkaConfig([`127.0.0.1:${port}`]);
    const services: RunningService[] = [];
    try {
      await broker('start');
      await t.db.many(relayAgain);
      services.push(await startRelayService({ db: t.db, kafka, relay: { batchSize: 100, pollIntervalMs: 50 }, codec, logger }));
      services.push(
        await startLoaderService({ kafka, loader: { groupId: kafka.groupId, flushIntervalMs: 100, minBatchBytes: 1 }, warehouse, codec, logger }),
      );
      const traffic = sendTraffic(app, programs, 60, 4);
      await new Promise((r) => setTimeout(r, 1_000));
      await broker('stop');
      await new Promise((r) => setTimeout(r, 2_000));
      await broker('start');
      await traffic;
      await sendTraffic(app, programs, 5);
      const { postgres, warehouse: seen } = await waitForSameFigures(t.db, warehouse, 150_000);
      expect(seen).toEqual(postgres);
      expect(postgres.some((l) => l.startsWith(`sales|${programs[0]!.programId}|`))).toBe(true);
    } finally {
      for (const s of services.reverse()) await s.stop().catch(() => undefined);
      await warehouse.close();
      await broker('stop').catch(() => undefined);
      await rm(state, { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    }
  }, 420_000);
});
