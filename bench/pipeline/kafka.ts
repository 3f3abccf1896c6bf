/**
 * The pipeline benchmark's Kafka side: per-run configs (unique topic prefix and group), the
 * broker's view of a consumer group (joined, caught up), cleanup of the run's topics and groups,
 * and the baseline: the same Avro messages produced and consumed with kafkajs alone (no Postgres,
 * no warehouse), the ceiling a relay and a loader on this broker and machine could reach.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../../core/config.js';
import type { LogMessage } from '../../processors/event-log/event-log.js';
import { createKafkajsEventLog, ensureTopics } from '../../processors/event-log/kafka.js';

/** Every topic and group of one benchmark run starts with this; nothing else is ever deleted. */
export const RUN_PREFIX = /^ats_bench_[a-z0-9]+_$/;

/** Partitions per topic: the service's default (KAFKA_TOPIC_PARTITIONS). */
export const PARTITIONS = 3;

export function kafkaConfig(brokers: string[], client: KafkaConfig['client'], topicPrefix: string): KafkaConfig {
  return { brokers, client, clientId: `${topicPrefix}bench`, topicPrefix, topics: { partitions: PARTITIONS, replicationFactor: 1 } };
}

/** One admin connection for the whole run. */
export class BrokerAdmin {
  private constructor(private readonly admin: Admin) {}

  static async connect(brokers: string[]): Promise<BrokerAdmin> {
    const admin = new Kafka({ clientId: 'ats-bench-admin', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    return new BrokerAdmin(admin);
  }

  /** The group has members with partitions assigned (a loader ready to consume). */
  async groupStable(groupId: string): Promise<boolean> {
    const { groups } = await this.admin.describeGroups([groupId]);
    const group = groups[0];
    return group?.state === 'Stable' && group.members.length > 0;
  }

  /** Messages not yet committed by the group: the sum over partitions of high watermark minus committed offset. */
  async groupLag(groupId: string, topics: readonly string[]): Promise<number> {
    const committed = await this.admin.fetchOffsets({ groupId, topics: [...topics] });
    let lag = 0;
    for (const topic of topics) {
      const ends = await this.admin.fetchTopicOffsets(topic);
      const mine = committed.find((c) => c.topic === topic)?.partitions ?? [];
      for (const end of ends) {
        const offset = Number(mine.find((p) => p.partition === end.partition)?.offset ?? -1);
        lag += Number(end.high) - Math.max(offset, Number(end.low));
      }
    }
    return lag;
  }

  /** Deletes the topics and groups whose names start with the run's prefix (and only those). */
  async dropRun(runPrefix: string, groupIds: readonly string[]): Promise<string[]> {
    if (!RUN_PREFIX.test(runPrefix)) throw new Error(`refusing to delete topics of ${runPrefix}`);
    const topics = (await this.admin.listTopics()).filter((t) => t.startsWith(runPrefix));
    if (topics.length) await this.admin.deleteTopics({ topics, timeout: 30_000 });
    const groups = groupIds.filter((g) => g.startsWith(runPrefix));
    if (groups.length) await this.admin.deleteGroups([...groups]).catch(() => undefined);
    return topics;
  }

  close(): Promise<void> {
    return this.admin.disconnect();
  }
}

export interface BaselineResult {
  produced: number;
  /** Events per second of sendBatch calls of batchSize messages, one at a time (the relay's pattern). */
  producePerS: number;
  consumed: number;
  /** Events per second a consumer group reads (and commits) from a full topic, from joining the group to the last batch. */
  consumePerS: number;
  /** Each round's consume rate (consumePerS is their median). */
  consumeRoundsPerS: number[];
  /** CPU ms of this process per 1,000 events, producing and consuming. */
  produceCpuPerThousand: number;
  consumeCpuPerThousand: number;
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * Produces the messages through the service's own kafkajs event log (idempotent, acks=all, one
 * request in flight), batchSize at a time, then consumes them with plain kafkajs groups, three in
 * turn (the loader's fetch settings, a commit per batch, nothing else done with the messages).
 */
export async function runBaseline(options: {
  config: KafkaConfig;
  topics: readonly string[];
  messages: readonly LogMessage[];
  batchSize: number;
  groupId: string;
  minBatchBytes: number;
  flushIntervalMs: number;
  logger: Logger;
  timeoutMs: number;
}): Promise<BaselineResult> {
  const { config, messages } = options;
  await ensureTopics(config, options.topics, options.logger);

  const log = await createKafkajsEventLog(config, options.logger);
  const produceStarted = performance.now();
  const produceCpu = cpuMs();
  try {
    for (let i = 0; i < messages.length; i += options.batchSize) await log.publish(messages.slice(i, i + options.batchSize));
  } finally {
    await log.close();
  }
  const produceSeconds = (performance.now() - produceStarted) / 1000;
  const produceCpuMs = cpuMs() - produceCpu;

  // A consume of the whole backlog lasts well under a second, so the wait for its first fetch
  // weighs on it: three groups read it in turn, and the median one is the baseline.
  const rounds: ConsumeRound[] = [];
  for (let round = 1; round <= CONSUME_ROUNDS; round++) rounds.push(await consumeAll(options, `${options.groupId}-${round}`));
  const median = [...rounds].sort((a, b) => a.perS - b.perS)[Math.floor(CONSUME_ROUNDS / 2)]!;
  return {
    produced: messages.length,
    producePerS: messages.length / produceSeconds,
    consumed: median.consumed,
    consumePerS: median.perS,
    consumeRoundsPerS: rounds.map((r) => r.perS),
    produceCpuPerThousand: (produceCpuMs / messages.length) * 1000,
    consumeCpuPerThousand: median.cpuPerThousand,
  };
}

/** Groups that read the baseline's backlog in turn (their names end in -1, -2, ...). */
export const CONSUME_ROUNDS = 3;

interface ConsumeRound {
  consumed: number;
  perS: number;
  cpuPerThousand: number;
}

/** One plain kafkajs group reads every message from the beginning, committing each batch. */
async function consumeAll(
  options: { config: KafkaConfig; topics: readonly string[]; messages: readonly LogMessage[]; minBatchBytes: number; flushIntervalMs: number; timeoutMs: number },
  groupId: string,
): Promise<ConsumeRound> {
  const { config, messages } = options;
  const kafka = new Kafka({ clientId: `${config.clientId}-consumer`, brokers: config.brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({
    groupId,
    minBytes: options.minBatchBytes,
    maxWaitTimeInMs: options.flushIntervalMs,
    maxBytesPerPartition: 4 * 1024 * 1024,
  });
  let consumed = 0;
  let joinedAt = 0;
  let joinedCpu = 0;
  let lastAt = 0;
  let lastCpu = 0;
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joinedAt = performance.now();
    joinedCpu = cpuMs();
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [...options.topics], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`baseline consumer read ${consumed} of ${messages.length} messages in ${options.timeoutMs} ms`)), options.timeoutMs);
      consumer
        .run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          eachBatch: async ({ batch, resolveOffset }) => {
            if (batch.isEmpty()) return;
            await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
            resolveOffset(batch.lastOffset());
            consumed += batch.messages.length;
            lastAt = performance.now();
            lastCpu = cpuMs();
            if (consumed >= messages.length) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return {
    consumed,
    perS: lastAt > joinedAt && joinedAt > 0 ? consumed / ((lastAt - joinedAt) / 1000) : Number.NaN,
    cpuPerThousand: joinedAt > 0 ? ((lastCpu - joinedCpu) / consumed) * 1000 : Number.NaN,
  };
}
