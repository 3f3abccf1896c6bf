import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { EventLog } from '../event-log/event-log.js';
import { deadLetterMessage } from './dead-letters.js';
import type { CombiningLoader, LoadResult, LoaderBatch } from './loader.js';

/** What the loader reports, for metrics and logs. */
export interface KafkaLoaderObserver {
  loaded?(topic: string, partition: number, result: Extract<LoadResult, { kind: 'ok' }>, seconds: number): void;
  failed?(topic: string, partition: number, error: unknown, attempt: number): void;
  lag?(topic: string, partition: number, lag: number): void;
}

export interface KafkaLoaderDeps {
  kafka: Kafka;
  groupId: string;
  topics: readonly string[];
  loader: CombiningLoader;
  /** Publishes dead letters (the reason and the original bytes) before their offsets are committed. */
  deadLetters: EventLog;
  deadLetterTopic: string;
  logger: Logger;
  /** A fetch waits for minBatchBytes or flushIntervalMs, whichever comes first: batches of thousands under load. */
  flushIntervalMs: number;
  minBatchBytes: number;
  /** Partitions consumed at the same time; their batches are loaded together (see combineLoads). */
  concurrency?: number;
  observer?: KafkaLoaderObserver;
  /** Longest pause between attempts while the warehouse keeps failing. */
  maxBackoffMs?: number;
}

export interface KafkaLoader {
  /** Finishes the batch in flight (its offsets committed only if the warehouse acknowledged it), then leaves the group. */
  stop(): Promise<void>;
}

/**
 * Batches submitted while a load is in flight are loaded together next, as one: with the
 * partitions of a fetch consumed concurrently, one load (one insert per table, one rollup
 * recompute) serves them all instead of one per partition, and each statement has a fixed cost.
 * One load is in flight at a time. Each batch still gets its own result and commits its own offset.
 */
export function combineLoads(loader: CombiningLoader): (batch: LoaderBatch) => Promise<LoadResult> {
  let queue: { batch: LoaderBatch; resolve: (result: LoadResult) => void }[] = [];
  let draining = false;
  async function drain() {
    while (queue.length > 0) {
      const taken = queue;
      queue = [];
      const results = await loader.loadMany(taken.map((t) => t.batch)).catch((error: unknown) =>
        taken.map((t): LoadResult => ({ kind: 'retry', error, messages: t.batch.messages.map((m) => ({ offset: m.offset, outcome: 'retry' as const })) })),
      );
      taken.forEach((t, i) => t.resolve(results[i]!));
    }
    draining = false;
  }
  return (batch) =>
    new Promise<LoadResult>((resolve) => {
      queue.push({ batch, resolve });
      if (draining) return;
      draining = true;
      // The other partitions of the same fetch are handed over in the same turn: let them join.
      setImmediate(() => void drain());
    });
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * The loaders' consumer group: each fetched batch of one partition is loaded into the warehouse,
 * its dead letters are published, and only then is its offset committed. A warehouse failure is
 * retried in place with backoff (heartbeats keep the partition), so nothing is skipped and nothing
 * is committed early; if the partition moves to another member meanwhile, the batch is dropped
 * uncommitted and the new owner loads it again, which the insert tokens and FINAL make harmless.
 */
export async function startKafkaLoader(deps: KafkaLoaderDeps): Promise<KafkaLoader> {
  const maxBackoffMs = deps.maxBackoffMs ?? 5_000;
  const consumer: Consumer = deps.kafka.consumer({
    groupId: deps.groupId,
    minBytes: deps.minBatchBytes,
    maxWaitTimeInMs: deps.flushIntervalMs,
    maxBytesPerPartition: 4 * 1024 * 1024,
    sessionTimeout: 30_000,
    heartbeatInterval: 3_000,
  });

  const load = combineLoads(deps.loader);

  async function eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    if (batch.isEmpty()) return;
    const lastOffset = batch.lastOffset();
    const loaderBatch: LoaderBatch = {
      topic,
      partition,
      messages: batch.messages.map((m) => ({
        offset: m.offset,
        key: m.key?.toString(),
        // A message without a value (a tombstone) is not an event: the loader dead-letters it.
        value: m.value ?? Buffer.alloc(0),
      })),
    };
    for (let attempt = 1; ; attempt += 1) {
      if (!isRunning() || isStale()) return;
      const started = process.hrtime.bigint();
      const result = await load(loaderBatch);
      if (result.kind === 'ok') {
        try {
          if (result.deadLetters.length) {
            await deps.deadLetters.publish(result.deadLetters.map((d) => deadLetterMessage(deps.deadLetterTopic, d)));
          }
          await consumer.commitOffsets([{ topic, partition, offset: result.nextOffset }]);
        } catch (error) {
          deps.observer?.failed?.(topic, partition, error, attempt);
          deps.logger.warn({ err: error, topic, partition, attempt }, 'loaded batch could not be committed; loading it again');
          await backoff(attempt, heartbeat);
          continue;
        }
        resolveOffset(lastOffset);
        deps.logger.debug({ topic, partition, nextOffset: result.nextOffset, loaded: result.loaded, deadLettered: result.deadLetters.length }, 'batch loaded');
        deps.observer?.loaded?.(topic, partition, result, Number(process.hrtime.bigint() - started) / 1e9);
        deps.observer?.lag?.(topic, partition, Number(batch.offsetLag()));
        return;
      }
      deps.observer?.failed?.(topic, partition, result.error, attempt);
      deps.logger.error({ err: result.error, topic, partition, firstOffset: batch.firstOffset(), attempt }, 'warehouse insert failed; retrying the batch');
      await backoff(attempt, heartbeat);
    }
  }

  async function backoff(attempt: number, heartbeat: () => Promise<void>) {
    await delay(Math.min(maxBackoffMs, 100 * 2 ** Math.min(attempt, 10)));
    await heartbeat().catch(() => undefined);
  }

  await consumer.connect();
  await consumer.subscribe({ topics: [...deps.topics], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: deps.concurrency ?? 64,
    eachBatch,
  });
  return {
    async stop() {
      await consumer.disconnect();
    },
  };
}
