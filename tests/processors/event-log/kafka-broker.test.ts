/**
 * Real Kafka, end to end through kafkajs (the client the relay and loaders use): a fresh topic, an
 * idempotent producer with acks=all, a fresh consumer group reading from the beginning, and the
 * topic deleted afterwards.
 *
 * Runs when KAFKA_BROKERS is set (comma-separated host:port; locally:
 * `scripts/kafka-broker.sh start && KAFKA_BROKERS=127.0.0.1:9092 npx vitest run tests/processors/event-log/kafka-broker.test.ts`).
 * In CI a missing KAFKA_BROKERS is an error, not a reason to skip.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Admin, type Consumer, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BROKERS = (process.env.KAFKA_BROKERS ?? '')
  .split(',')
  .map((b) => b.trim())
  .filter(Boolean);

if (process.env.CI && BROKERS.length === 0) {
  throw new Error('CI is set but KAFKA_BROKERS is not: the Kafka tests cannot be skipped in CI (start one with scripts/kafka-broker.sh start)');
}

const CONSUME_TIMEOUT_MS = 30_000;

describe.skipIf(BROKERS.length === 0)('real Kafka at KAFKA_BROKERS', () => {
  const suffix = randomBytes(6).toString('hex');
  const topic = `ats_test_kafka_${suffix}`;
  const groupId = `ats_test_group_${suffix}`;
  const kafka = new Kafka({ clientId: `ats-test-${suffix}`, brokers: BROKERS, logLevel: logLevel.ERROR, connectionTimeout: 5_000 });
  let admin: Admin;
  let producer: Producer | undefined;
  let consumer: Consumer | undefined;
  let topicCreated = false;

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await producer?.disconnect();
    if (admin) {
      // Cleanup after a failure half-way; the happy path deleted the topic in its own test.
      if (topicCreated) await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    }
  });

  it('creates a fresh topic', async () => {
    expect(await admin.listTopics()).not.toContain(topic);
    const created = await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
    topicCreated = true;
    expect(created).toBe(true);
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(meta.topics[0]?.partitions).toHaveLength(1);
  });

  it('round-trips messages from an idempotent producer (acks=all) to a fresh consumer group', async () => {
    const sent = Array.from({ length: 5 }, (_, i) => ({
      key: `key-${i}`,
      value: JSON.stringify({ event_id: `${suffix}-${i}`, n: i }),
      headers: { 'event-type': 'test.event' },
    }));

    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const acks = await producer.send({ topic, acks: -1, messages: sent });
    expect(acks).toEqual([expect.objectContaining({ topicName: topic, partition: 0, errorCode: 0 })]);

    consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 1_000 });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const received: { key: string; value: string; header: string; offset: string }[] = [];
    const all = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${received.length} of ${sent.length} messages within ${CONSUME_TIMEOUT_MS} ms`)), CONSUME_TIMEOUT_MS);
      void consumer!.run({
        eachMessage: async ({ message }) => {
          received.push({
            key: message.key?.toString() ?? '',
            value: message.value?.toString() ?? '',
            header: message.headers?.['event-type']?.toString() ?? '',
            offset: message.offset,
          });
          if (received.length >= sent.length) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
    await all;

    expect(received).toEqual(sent.map((m, i) => ({ key: m.key, value: m.value, header: 'test.event', offset: String(i) })));
    // The group committed its position (consumer.stop commits what eachMessage resolved).
    await consumer.stop();
    const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(offsets).toEqual([{ topic, partitions: [expect.objectContaining({ partition: 0, offset: String(sent.length) })] }]);
  });

  it('deletes the topic', async () => {
    await consumer?.disconnect();
    consumer = undefined;
    await admin.deleteTopics({ topics: [topic], timeout: 10_000 });
    topicCreated = false;
    expect(await admin.listTopics()).not.toContain(topic);
  });
});
