import { ProduceAcks, Producer as PlatformaticProducer } from '@platformatic/kafka';
import { Kafka, logLevel, Partitioners, type logCreator } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../../core/config.js';
import type { EventLog, LogMessage } from './event-log.js';

/** kafkajs logs through our pino logger (JSON, redacted), at warn and above unless debugging. */
function kafkajsLogCreator(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      const line = { component: 'kafkajs', ...extra };
      if (level === logLevel.ERROR) logger.error(line, message);
      else if (level === logLevel.WARN) logger.warn(line, message);
      else if (level === logLevel.INFO) logger.debug(line, message);
    };
}

/** One kafkajs client per process: producers, consumers and admins share its connection settings. */
export function createKafkajsClient(config: KafkaConfig, logger: Logger, clientIdSuffix = ''): Kafka {
  return new Kafka({
    clientId: `${config.clientId}${clientIdSuffix}`,
    brokers: config.brokers,
    logLevel: logLevel.INFO,
    logCreator: kafkajsLogCreator(logger),
    connectionTimeout: 5_000,
    // A broker restart takes seconds: retry for about half a minute before a call fails.
    retry: { initialRetryTime: 300, maxRetryTime: 5_000, retries: 8 },
  });
}

/**
 * Creates the topics that do not exist yet, with the configured partitions and replication.
 * Returns the names it created; existing topics are left as they are.
 */
export async function ensureTopics(config: KafkaConfig, topics: readonly string[], logger: Logger): Promise<string[]> {
  const admin = createKafkajsClient(config, logger, '-admin').admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length === 0) return [];
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((topic) => ({
        topic,
        numPartitions: config.topics.partitions,
        replicationFactor: config.topics.replicationFactor,
        // acks=all is only as strong as the in-sync replicas it waits for.
        configEntries: config.topics.replicationFactor > 1 ? [{ name: 'min.insync.replicas', value: '2' }] : [],
      })),
    });
    return missing;
  } finally {
    await admin.disconnect();
  }
}

function byTopic(messages: readonly LogMessage[]): Map<string, LogMessage[]> {
  const grouped = new Map<string, LogMessage[]>();
  for (const m of messages) {
    const list = grouped.get(m.topic);
    if (list) list.push(m);
    else grouped.set(m.topic, [m]);
  }
  return grouped;
}

/** The event log on Kafka through kafkajs: an idempotent producer, acks from all in-sync replicas. */
export async function createKafkajsEventLog(config: KafkaConfig, logger: Logger): Promise<EventLog> {
  const producer = createKafkajsClient(config, logger, '-producer').producer({
    idempotent: true,
    // One request in flight keeps a key's messages in order across retries.
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  return {
    async publish(messages) {
      if (messages.length === 0) return;
      await producer.sendBatch({
        acks: -1,
        timeout: 30_000,
        topicMessages: [...byTopic(messages)].map(([topic, list]) => ({
          topic,
          messages: list.map((m) => ({ key: m.key, value: m.value })),
        })),
      });
    },
    close: () => producer.disconnect(),
  };
}

/** The same event log through @platformatic/kafka (maintained, KafkaJS-like), for the swap and the benchmark. */
async function createPlatformaticEventLog(config: KafkaConfig): Promise<EventLog> {
  const producer = new PlatformaticProducer({
    clientId: `${config.clientId}-producer`,
    bootstrapBrokers: config.brokers,
    idempotent: true,
    acks: ProduceAcks.ALL,
    retries: 8,
    retryDelay: 1_000,
  });
  return {
    async publish(messages) {
      if (messages.length === 0) return;
      await producer.send({ messages: messages.map((m) => ({ topic: m.topic, key: Buffer.from(m.key), value: m.value })) });
    },
    close: () => producer.close(),
  };
}

/** The configured client's event log. */
export function createKafkaEventLog(config: KafkaConfig, logger: Logger): Promise<EventLog> {
  return config.client === 'platformatic' ? createPlatformaticEventLog(config) : createKafkajsEventLog(config, logger);
}
