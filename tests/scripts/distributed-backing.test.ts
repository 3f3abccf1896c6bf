/**
 * The event log under `npm run start:distributed` (scripts/distributed/backing.ts): a broker that
 * answers on KAFKA_PORT is used and left alone; where none answers, a broker of the start's own is
 * started by scripts/kafka-broker.sh on that port with its state in the start's data directory,
 * and the stop ends that broker only (the suite's broker keeps answering). Real brokers, no mocks.
 */
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureKafka, tcpOpen, type Backing } from '../../scripts/distributed/backing.js';
import { alive } from '../support/distributed.js';
import { kafkaBrokers } from '../support/kafka.js';

const ROOT = join(import.meta.dirname, '../..');
// The suite's broker was started by scripts/kafka-broker.sh, so its jars are in the cache.
const BROKERS = kafkaBrokers();

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

describe.skipIf(BROKERS.length === 0)('start:distributed finds or starts its Kafka broker', () => {
  const lines: string[] = [];
  const say = (line: string) => lines.push(line);
  let dir: string | undefined;
  let own: Backing | undefined;
  afterAll(async () => {
    await own?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('uses a broker that answers on KAFKA_PORT and never stops it', async () => {
    const port = Number(BROKERS[0]!.split(':')[1]);
    const found = await ensureKafka(ROOT, { given: undefined, port, controllerPort: undefined, stateDir: '/nonexistent' }, say);
    expect(found).toMatchObject({ url: `127.0.0.1:${port}`, started: false });
    await found.stop();
    expect(await tcpOpen('127.0.0.1', port)).toBe(true);
  });

  it('starts a broker of its own on a free KAFKA_PORT, its state in the data directory, and stops only that one', { timeout: 180_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-distributed-kafka-'));
    const port = await freePort();
    const controllerPort = await freePort();
    own = await ensureKafka(ROOT, { given: undefined, port, controllerPort, stateDir: dir }, say);
    expect(own).toMatchObject({ url: `127.0.0.1:${port}`, started: true });
    const pid = Number((await readFile(join(dir, 'broker.pid'), 'utf8')).trim());
    expect(alive(pid)).toBe(true);

    // A real broker: a topic made and listed through it.
    const admin = new Kafka({ clientId: 'ats-test-own-broker', brokers: [own.url], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic: 'ats_test_own_broker', numPartitions: 1 }] });
      expect(await admin.listTopics()).toContain('ats_test_own_broker');
    } finally {
      await admin.disconnect();
    }

    await own.stop();
    own = undefined;
    expect(alive(pid)).toBe(false);
    expect(await tcpOpen('127.0.0.1', port)).toBe(false);
    const [host, shared] = BROKERS[0]!.split(':');
    expect(await tcpOpen(host!, Number(shared))).toBe(true);
    expect(lines.join('\n')).toContain(`starting Kafka on 127.0.0.1:${port}`);
  });
});
