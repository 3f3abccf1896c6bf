import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { KafkaConfig } from '../../core/config.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { topicsOf } from '../../processors/event-log/topics.js';

/** KAFKA_BROKERS as a list; in CI an empty one is an error, not a reason to skip. */
export function kafkaBrokers(): string[] {
  const brokers = (process.env.KAFKA_BROKERS ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  if (process.env.CI && brokers.length === 0) {
    throw new Error('CI is set but KAFKA_BROKERS is not: the Kafka tests cannot be skipped in CI (start one with scripts/kafka-broker.sh start)');
  }
  return brokers;
}

/** A Kafka config of its own: unique topic prefix and group, so test files never share topics. */
export function testKafkaConfig(brokers: string[], client: KafkaConfig['client'] = 'kafkajs'): KafkaConfig & { groupId: string } {
  const id = randomBytes(5).toString('hex');
  return {
    brokers,
    client,
    clientId: `ats-test-${id}`,
    topicPrefix: `ats_test_${id}.`,
    topics: { partitions: 3, replicationFactor: 1 },
    groupId: `ats_test_loader_${id}`,
  };
}

/** Deletes the config's topics and group (only names made by testKafkaConfig). */
export async function dropTestTopics(config: KafkaConfig & { groupId: string }): Promise<void> {
  if (!config.topicPrefix.startsWith('ats_test_')) throw new Error(`refusing to delete topics of ${config.topicPrefix}`);
  const topics = topicsOf(createAvroCodec(), config.topicPrefix);
  const admin = new Kafka({ clientId: config.clientId, brokers: config.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const mine = [...topics.events, topics.deadLetter].filter((t) => existing.has(t));
    if (mine.length) await admin.deleteTopics({ topics: mine, timeout: 10_000 });
    await admin.deleteGroups([config.groupId]).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
}

/** Messages per topic up to the high watermark (the sum over partitions). */
export async function topicSizes(config: KafkaConfig, topics: readonly string[]): Promise<Record<string, number>> {
  const admin = new Kafka({ clientId: config.clientId, brokers: config.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const sizes: Record<string, number> = {};
    for (const topic of topics) {
      const offsets = await admin.fetchTopicOffsets(topic);
      sizes[topic] = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    }
    return sizes;
  } finally {
    await admin.disconnect();
  }
}

/** Every message of a topic from the start (small topics only: the dead-letter topic in tests). */
export async function readTopic(config: KafkaConfig, topic: string, expected: number, timeoutMs = 30_000): Promise<Buffer[]> {
  const kafka = new Kafka({ clientId: config.clientId, brokers: config.brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `ats_test_reader_${randomBytes(4).toString('hex')}` });
  const values: Buffer[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${values.length} of ${expected} messages of ${topic}`)), timeoutMs);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.value) values.push(message.value);
          if (values.length >= expected) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
    return values;
  } finally {
    await consumer.disconnect();
  }
}

/** Resolves once the group has committed every partition of the topics up to its end. */
export async function waitForGroupCaughtUp(config: KafkaConfig & { groupId: string }, topics: readonly string[], timeoutMs = 60_000): Promise<void> {
  const admin = new Kafka({ clientId: config.clientId, brokers: config.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let behind = 0;
      for (const topic of topics) {
        const ends = await admin.fetchTopicOffsets(topic);
        const [group] = await admin.fetchOffsets({ groupId: config.groupId, topics: [topic] });
        for (const p of ends) {
          const committed = Number(group?.partitions.find((g) => g.partition === p.partition)?.offset ?? '-1');
          behind += Math.max(0, Number(p.high) - Math.max(committed, Number(p.low)));
        }
      }
      if (behind === 0) return;
      if (Date.now() > deadline) throw new Error(`the loader group is still ${behind} messages behind`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await admin.disconnect();
  }
}
