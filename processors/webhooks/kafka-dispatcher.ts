/**
 * The dispatcher in the distributed mode: a consumer group of its own (WEBHOOKS_GROUP_ID) on the
 * topics that carry mapped events. A batch's deliveries are committed to Postgres before its offset
 * is committed to Kafka; a Postgres failure is retried in place (heartbeats keep the partition), so
 * nothing is skipped. A batch read again after a crash or a rebalance creates no delivery twice.
 */
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { Dispatcher } from './dispatcher.js';

export interface KafkaDispatcherDeps {
  kafka: Kafka;
  groupId: string;
  /** The installation's names of the dispatcher's topics. */
  topics: readonly string[];
  dispatcher: Dispatcher;
  logger: Logger;
  /** A fetch waits at most this long for more messages (latency from commit to delivery). */
  maxWaitMs?: number;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export async function startKafkaDispatcher(deps: KafkaDispatcherDeps): Promise<{ stop(): Promise<void> }> {
  const consumer: Consumer = deps.kafka.consumer({
    groupId: deps.groupId,
    maxWaitTimeInMs: deps.maxWaitMs ?? 100,
    sessionTimeout: 30_000,
    heartbeatInterval: 3_000,
  });

  async function eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    if (batch.isEmpty()) return;
    const { topic, partition } = batch;
    const values = batch.messages.map((m) => m.value ?? Buffer.alloc(0));
    const publishedAt = batch.messages.map((m) => (m.timestamp ? new Date(Number(m.timestamp)) : undefined));
    const next = (BigInt(batch.lastOffset()) + 1n).toString();
    for (let attempt = 1; ; attempt += 1) {
      if (!isRunning() || isStale()) return;
      try {
        const result = await deps.dispatcher.dispatch(values, publishedAt);
        await consumer.commitOffsets([{ topic, partition, offset: next }]);
        resolveOffset(batch.lastOffset());
        if (result.unreadable) deps.logger.warn({ topic, partition, unreadable: result.unreadable }, 'webhook dispatcher skipped messages it cannot decode');
        return;
      } catch (error) {
        deps.logger.error({ err: error, topic, partition, attempt }, 'webhook deliveries could not be written; retrying the batch');
        await delay(Math.min(5_000, 100 * 2 ** Math.min(attempt, 10)));
        await heartbeat().catch(() => undefined);
      }
    }
  }

  await consumer.connect();
  await consumer.subscribe({ topics: [...deps.topics], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 8, eachBatch });
  return { stop: () => consumer.disconnect() };
}
