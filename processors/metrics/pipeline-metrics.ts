/**
 * The pipeline's figures (relayed, loaded, dead-lettered, relay backlog, consumer lag, batch load
 * time) as Prometheus metrics on a registry of their own, served by serveMetrics()
 * (metrics-server.ts) and written to the log by startMetricsLog(). No global default registry:
 * every process (and every test) creates its own, so two pipelines in one process never share a
 * counter. What each processor is measured by: relay-metrics.ts and loader-metrics.ts.
 */
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import type { Queryable } from '../../core/db.js';
import type { DeadLetter } from '../loader/dead-letters.js';
import { LOADER_METRIC_NAMES, loaderMetrics } from './loader-metrics.js';
import { RELAY_METRIC_NAMES, relayMetrics, type RelayBacklog } from './relay-metrics.js';

/** Where a message was given up: the relay could not encode the row, or the loader could not decode or map the message. */
export type DeadLetterStage = 'relay.encode' | DeadLetter['stage'];

export const METRIC_NAMES = { ...RELAY_METRIC_NAMES, ...LOADER_METRIC_NAMES, deadLettered: 'ats_events_dead_lettered_total' } as const;

export interface PipelineMetricsDeps {
  /** The outbox's database: the backlog gauges are registered only where it is given (the relay process). */
  db?: Queryable;
  /** Told when the backlog query fails; the two gauges then read NaN for that scrape. */
  logger?: Logger;
  /** Process metrics (CPU, memory, event loop lag, GC) on the same registry; on by default. */
  processMetrics?: boolean;
  /** Seconds; the loads of one batch of thousands of rows take from milliseconds to seconds. */
  batchLoadBuckets?: number[];
}

export type PipelineMetrics = ReturnType<typeof createPipelineMetrics>;

export interface PipelineFigures {
  relayed: Record<string, number>;
  loaded: Record<string, number>;
  /** Keyed `<topic>/<stage>`. */
  deadLettered: Record<string, number>;
  /** Keyed `<topic>/<partition>`. */
  consumerLag: Record<string, number>;
  /** Acknowledged batch loads, their total time, and the failed attempts. */
  batchLoads: { count: number; seconds: number; retries: number };
  backlog?: RelayBacklog;
}

type Labels = Partial<Record<string, string | number>>;

/** A metric's values keyed by their labels (keyOf). */
async function byLabel(metric: { get(): Promise<{ values: { labels: Labels; value: number }[] }> }, keyOf: (labels: Labels) => string) {
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) out[keyOf(v.labels)] = v.value;
  return out;
}

/**
 * The pipeline's metrics on a new registry. Record with the functions it returns, or wrap the
 * relay's event log (instrumentEventLog) and the loader (instrumentLoader) so every batch is
 * counted without touching the relay or loader code.
 */
export function createPipelineMetrics(deps: PipelineMetricsDeps = {}) {
  const registry = new Registry();
  if (deps.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'ats_' });

  // One counter for both processors, labelled by the stage that gave the message up.
  const deadLettered = new Counter({
    name: METRIC_NAMES.deadLettered,
    help: 'Messages sent to the dead-letter topic, per source topic and stage (relay.encode, loader.decode, loader.map).',
    labelNames: ['topic', 'stage'] as const,
    registers: [registry],
  });
  function recordDeadLetter(topic: string, stage: DeadLetterStage, count = 1) {
    if (count > 0) deadLettered.inc({ topic, stage }, count);
  }
  const relay = relayMetrics(registry, { db: deps.db, logger: deps.logger, recordDeadLetter });
  const { instruments, ...loader } = loaderMetrics(registry, { batchLoadBuckets: deps.batchLoadBuckets, recordDeadLetter });

  /** The figures of the log line: totals per topic (and stage, partition) and the backlog. */
  async function snapshot(): Promise<PipelineFigures> {
    const batches = (await instruments.batchLoad.get()).values;
    const sumOf = (name: string) => batches.filter((v) => v.metricName === name).reduce((s, v) => s + v.value, 0);
    const backlog = relay.readBacklog ? await relay.readBacklog() : undefined;
    return {
      relayed: await byLabel(relay.relayed, (l) => String(l.topic)),
      loaded: await byLabel(instruments.loaded, (l) => String(l.topic)),
      deadLettered: await byLabel(deadLettered, (l) => `${l.topic}/${l.stage}`),
      consumerLag: await byLabel(instruments.consumerLag, (l) => `${l.topic}/${l.partition}`),
      batchLoads: {
        count: sumOf(`${METRIC_NAMES.batchLoad}_count`),
        seconds: Number(sumOf(`${METRIC_NAMES.batchLoad}_sum`).toFixed(3)),
        retries: Object.values(await byLabel(instruments.batchRetries, (l) => String(l.topic))).reduce((s, n) => s + n, 0),
      },
      ...(relay.readBacklog ? { backlog: backlog ?? { events: NaN, oldestAgeSeconds: NaN } } : {}),
    };
  }

  return {
    registry,
    recordRelayed: relay.recordRelayed,
    recordDeadLetter,
    ...loader,
    instrumentEventLog: relay.instrumentEventLog,
    snapshot,
  };
}

/**
 * One info line with the figures every intervalMs, so they are in the logs as well as on
 * /metrics. Returns stop(). A failed read is logged and the next tick tries again.
 */
export function startMetricsLog(deps: { metrics: Pick<PipelineMetrics, 'snapshot'>; logger: Logger; intervalMs: number }): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    try {
      deps.logger.info({ pipeline: await deps.metrics.snapshot() }, 'pipeline figures');
    } catch (error) {
      deps.logger.warn({ err: error }, 'pipeline figures could not be read');
    }
    if (!stopped) timer = setTimeout(tick, deps.intervalMs).unref();
  };
  timer = setTimeout(tick, deps.intervalMs).unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
