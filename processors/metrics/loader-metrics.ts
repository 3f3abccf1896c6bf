/**
 * What the loader is measured by: events loaded per topic, batch load time, batches tried again,
 * the consumer group's lag, and the messages it dead-lettered (on the pipeline's shared counter).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DeadLetter } from '../loader/dead-letters.js';
import type { KafkaLoaderObserver } from '../loader/kafka-loader.js';
import type { Loader, LoaderBatch, LoadResult } from '../loader/loader.js';

export const LOADER_METRIC_NAMES = {
  loaded: 'ats_events_loaded_total',
  consumerLag: 'ats_loader_consumer_lag_messages',
  batchLoad: 'ats_loader_batch_load_duration_seconds',
  batchRetries: 'ats_loader_batch_retries_total',
} as const;

export interface LoaderMetricsDeps {
  /** Seconds; the loads of one batch of thousands of rows take from milliseconds to seconds. */
  batchLoadBuckets?: number[];
  /** The pipeline's dead-letter counter, which the loader shares with the relay. */
  recordDeadLetter(topic: string, stage: DeadLetter['stage'], count?: number): void;
}

function loaderInstruments(registry: Registry, batchLoadBuckets: number[] | undefined) {
  return {
    loaded: new Counter({
      name: LOADER_METRIC_NAMES.loaded,
      help: 'Events loaded into the warehouse (acknowledged by it), per topic.',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
    consumerLag: new Gauge({
      name: LOADER_METRIC_NAMES.consumerLag,
      help: 'Messages between the loader group committed offset and the end of the partition, per topic and partition.',
      labelNames: ['topic', 'partition'] as const,
      registers: [registry],
    }),
    batchLoad: new Histogram({
      name: LOADER_METRIC_NAMES.batchLoad,
      help: 'Time to load one batch into the warehouse (every table insert of the batch, acknowledged), per topic.',
      labelNames: ['topic'] as const,
      buckets: batchLoadBuckets ?? [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    batchRetries: new Counter({
      name: LOADER_METRIC_NAMES.batchRetries,
      help: 'Batch loads that failed (warehouse error, or the commit after it) and are tried again, per topic.',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
  };
}

export function loaderMetrics(registry: Registry, deps: LoaderMetricsDeps) {
  const instruments = loaderInstruments(registry, deps.batchLoadBuckets);
  const { loaded, consumerLag, batchLoad, batchRetries } = instruments;

  function recordLoaded(topic: string, count = 1) {
    if (count > 0) loaded.inc({ topic }, count);
  }
  function setConsumerLag(topic: string, partition: number, lag: number) {
    consumerLag.set({ topic, partition: String(partition) }, lag);
  }
  function observeBatchLoad(topic: string, seconds: number) {
    batchLoad.observe({ topic }, seconds);
  }
  function recordBatchRetry(topic: string) {
    batchRetries.inc({ topic });
  }

  /** Counts one loader result: an acknowledged batch's time, loaded events and dead letters per stage; or a retry. */
  function recordLoadResult(topic: string, result: LoadResult, seconds: number) {
    if (result.kind !== 'ok') return recordBatchRetry(topic);
    observeBatchLoad(topic, seconds);
    recordLoaded(topic, result.loaded);
    for (const d of result.deadLetters) deps.recordDeadLetter(topic, d.stage, 1);
  }

  /**
   * The loader, timing every load and counting what it loaded and dead-lettered per topic. Use it
   * where no observer reports the same loads (the embedded mode's loading log, the log loader);
   * the Kafka loader reports through loaderObserver() instead, so nothing is counted twice.
   */
  function instrumentLoader(loader: Loader): Loader {
    return {
      async load(batch: LoaderBatch) {
        const started = process.hrtime.bigint();
        const result = await loader.load(batch);
        recordLoadResult(batch.topic, result, Number(process.hrtime.bigint() - started) / 1e9);
        return result;
      },
    };
  }

  /** Fits the Kafka loader's observer (loaded, failed, lag): loaded batches, their time, retries, and the lag. */
  function loaderObserver() {
    return {
      loaded(topic: string, _partition: number, result: Extract<LoadResult, { kind: 'ok' }>, seconds: number) {
        recordLoadResult(topic, result, seconds);
      },
      failed(topic: string, _partition: number, _error: unknown, _attempt: number) {
        recordBatchRetry(topic);
      },
      lag(topic: string, partition: number, lag: number) {
        setConsumerLag(topic, partition, lag);
      },
    } satisfies KafkaLoaderObserver;
  }

  return { instruments, recordLoaded, setConsumerLag, observeBatchLoad, recordBatchRetry, recordLoadResult, instrumentLoader, loaderObserver };
}
