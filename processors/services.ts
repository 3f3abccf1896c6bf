import type { Logger } from 'pino';
import type { KafkaConfig, LoaderConfig, RelayConfig } from '../core/config.js';
import type { Database } from '../core/db.js';
import type { Warehouse } from '../core/warehouse.js';
import type { EventType } from '../schemas/event-contract.js';
import type { AvroCodec } from './avro/codec.js';
import type { EventLog } from './event-log/event-log.js';
import { createKafkaEventLog, createKafkajsClient, ensureTopics } from './event-log/kafka.js';
import { startKafkaLoader, type KafkaLoaderObserver } from './loader/kafka-loader.js';
import type { PipelineMetrics } from './metrics/pipeline-metrics.js';
import { createLoader } from './loader/loader.js';
import { createRelay, type RelayResult } from './relay.js';
import { topicsOf } from './event-log/topics.js';

export interface RunningService {
  /** Drains what is in flight, commits, closes its connections. */
  stop(): Promise<void>;
}

/** Creates the installation's topics (idempotent); relay and loader both call it at start. */
export async function createTopics(kafka: KafkaConfig, codec: AvroCodec, logger: Logger): Promise<void> {
  const topics = topicsOf(codec, kafka.topicPrefix);
  const created = await ensureTopics(kafka, [...topics.events, topics.deadLetter], logger);
  if (created.length) logger.info({ created, partitions: kafka.topics.partitions, replicationFactor: kafka.topics.replicationFactor }, 'topics created');
}

export interface RelayServiceDeps {
  db: Database;
  kafka: KafkaConfig;
  relay: RelayConfig;
  codec: AvroCodec;
  logger: Logger;
  metrics?: PipelineMetrics;
  onResult?(result: RelayResult): void;
}

/** The relay: outbox to Kafka, in commit order, marking rows only after Kafka acknowledged them. */
export async function startRelayService(deps: RelayServiceDeps): Promise<RunningService> {
  await createTopics(deps.kafka, deps.codec, deps.logger);
  const topics = topicsOf(deps.codec, deps.kafka.topicPrefix);
  const log: EventLog = await createKafkaEventLog(deps.kafka, deps.logger);
  const counted = deps.metrics
    ? deps.metrics.instrumentEventLog(log, {
        deadLetterTopic: topics.deadLetter,
        topicOf: (eventType) => topics.name(deps.codec.route(eventType as EventType).topic),
      })
    : log;
  const relay = createRelay({
    db: deps.db,
    log: counted,
    encode: (row) => {
      const message = deps.codec.message(row);
      return { ...message, topic: topics.name(message.topic) };
    },
    deadLetterTopic: topics.deadLetter,
    batchSize: deps.relay.batchSize,
  });
  const loop = relay.start({
    intervalMs: deps.relay.pollIntervalMs,
    onResult: (result) => {
      if (result.kind === 'retry') deps.logger.error({ err: result.error }, 'relay batch failed; retrying');
      else if (result.kind === 'ok' && result.deadLettered) deps.logger.error({ deadLettered: result.deadLettered }, 'outbox rows dead-lettered');
      deps.onResult?.(result);
    },
  });
  return {
    async stop() {
      await loop.stop();
      await log.close();
    },
  };
}

export interface LoaderServiceDeps {
  kafka: KafkaConfig;
  loader: LoaderConfig;
  warehouse: Warehouse;
  codec: AvroCodec;
  logger: Logger;
  /** Counts loads, dead letters, retries and lag (or pass an observer of your own). */
  metrics?: PipelineMetrics;
  observer?: KafkaLoaderObserver;
}

/** The loader: the consumer group from the event topics into the warehouse. */
export async function startLoaderService(deps: LoaderServiceDeps): Promise<RunningService> {
  await createTopics(deps.kafka, deps.codec, deps.logger);
  const topics = topicsOf(deps.codec, deps.kafka.topicPrefix);
  const deadLetters = await createKafkaEventLog(deps.kafka, deps.logger);
  const consumer = await startKafkaLoader({
    kafka: createKafkajsClient(deps.kafka, deps.logger, '-loader'),
    groupId: deps.loader.groupId,
    topics: topics.events,
    loader: createLoader({ warehouse: deps.warehouse, decode: deps.codec.decode }),
    deadLetters,
    deadLetterTopic: topics.deadLetter,
    logger: deps.logger,
    flushIntervalMs: deps.loader.flushIntervalMs,
    minBatchBytes: deps.loader.minBatchBytes,
    observer: deps.observer ?? deps.metrics?.loaderObserver(),
  });
  return {
    async stop() {
      await consumer.stop();
      await deadLetters.close();
    },
  };
}
