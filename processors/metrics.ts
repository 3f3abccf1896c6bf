/**
 * The pipeline's figures (relayed, loaded, dead-lettered, relay backlog, consumer lag, batch load
 * time) as Prometheus metrics on a registry of their own, served by serveMetrics() and written
 * to the log by startMetricsLog(). No global default registry: every process (and every test)
 * creates its own, so two pipelines in one process never share a counter.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { sql, type Queryable } from '../core/db.js';
import type { EventLog, LogMessage } from './event-log/event-log.js';
import type { KafkaLoaderObserver } from './loader/kafka-loader.js';
import type { LoaderBatch, Loader, LoadResult } from './loader/loader.js';

/** Where a message was given up: the relay could not encode the row, or the loader could not decode or map the message. */
export type DeadLetterStage = 'relay.encode' | 'loader.decode' | 'loader.map';

export const METRIC_NAMES = {
  relayed: 'ats_events_relayed_total',
  loaded: 'ats_events_loaded_total',
  deadLettered: 'ats_events_dead_lettered_total',
  backlogAge: 'ats_relay_backlog_oldest_age_seconds',
  backlogEvents: 'ats_relay_backlog_events',
  consumerLag: 'ats_loader_consumer_lag_messages',
  batchLoad: 'ats_loader_batch_load_duration_seconds',
  batchRetries: 'ats_loader_batch_retries_total',
} as const;

const q = {
  /*
   * Every unrelayed row counts, including rows of transactions the relay cannot take yet. The
   * partial index outbox_unrelayed covers exactly these rows, so the query reads only the backlog.
   * created_at is when the row entered the outbox (occurred_at is the business time, which may lie
   * in the past), so the age is how long the oldest event has waited for the relay.
   */
  backlog: sql(
    'metrics.relay_backlog',
    `SELECT count(*) AS events,
            coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0) AS oldest_age_seconds
       FROM outbox
      WHERE relayed_at IS NULL`,
  ),
};

export interface RelayBacklog {
  events: number;
  oldestAgeSeconds: number;
}

/** Reads the relay backlog: the count of unrelayed outbox events and the age of the oldest. */
export async function readRelayBacklog(db: Queryable): Promise<RelayBacklog> {
  const row = await db.one<{ events: number; oldest_age_seconds: number }>(q.backlog);
  return { events: Number(row?.events ?? 0), oldestAgeSeconds: Math.max(0, Number(row?.oldest_age_seconds ?? 0)) };
}

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

/**
 * The pipeline's metrics on a new registry. Record with the functions it returns, or wrap the
 * relay's event log (instrumentEventLog) and the loader (instrumentLoader) so every batch is
 * counted without touching the relay or loader code.
 */
export function createPipelineMetrics(deps: PipelineMetricsDeps = {}) {
  const registry = new Registry();
  if (deps.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'ats_' });

  const relayed = new Counter({
    name: METRIC_NAMES.relayed,
    help: 'Outbox events published to the event log, per topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
  });
  const loaded = new Counter({
    name: METRIC_NAMES.loaded,
    help: 'Events loaded into the warehouse (acknowledged by it), per topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
  });
  const deadLettered = new Counter({
    name: METRIC_NAMES.deadLettered,
    help: 'Messages sent to the dead-letter topic, per source topic and stage (relay.encode, loader.decode, loader.map).',
    labelNames: ['topic', 'stage'] as const,
    registers: [registry],
  });
  const consumerLag = new Gauge({
    name: METRIC_NAMES.consumerLag,
    help: 'Messages between the loader group committed offset and the end of the partition, per topic and partition.',
    labelNames: ['topic', 'partition'] as const,
    registers: [registry],
  });
  const batchLoad = new Histogram({
    name: METRIC_NAMES.batchLoad,
    help: 'Time to load one batch into the warehouse (every table insert of the batch, acknowledged), per topic.',
    labelNames: ['topic'] as const,
    buckets: deps.batchLoadBuckets ?? [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const batchRetries = new Counter({
    name: METRIC_NAMES.batchRetries,
    help: 'Batch loads that failed (warehouse error, or the commit after it) and are tried again, per topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
  });

  // One query per scrape feeds both gauges: prom-client collects the metrics of a scrape
  // concurrently, so the second collect() joins the query the first one started.
  let backlogRead: Promise<RelayBacklog | undefined> | undefined;
  const db = deps.db;
  const readBacklog = () =>
    (backlogRead ??= (db ? readRelayBacklog(db) : Promise.resolve(undefined))
      .catch((error: unknown) => {
        deps.logger?.warn({ err: error }, 'relay backlog could not be read for the metrics');
        return undefined;
      })
      .finally(() => {
        backlogRead = undefined;
      }));
  if (db) {
    new Gauge({
      name: METRIC_NAMES.backlogAge,
      help: 'Age in seconds of the oldest outbox event not yet relayed (0 when none waits; NaN when the outbox could not be read).',
      registers: [registry],
      async collect() {
        this.set((await readBacklog())?.oldestAgeSeconds ?? NaN);
      },
    });
    new Gauge({
      name: METRIC_NAMES.backlogEvents,
      help: 'Outbox events not yet relayed (NaN when the outbox could not be read).',
      registers: [registry],
      async collect() {
        this.set((await readBacklog())?.events ?? NaN);
      },
    });
  }

  function recordRelayed(topic: string, count = 1) {
    if (count > 0) relayed.inc({ topic }, count);
  }
  function recordLoaded(topic: string, count = 1) {
    if (count > 0) loaded.inc({ topic }, count);
  }
  function recordDeadLetter(topic: string, stage: DeadLetterStage, count = 1) {
    if (count > 0) deadLettered.inc({ topic, stage }, count);
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
    for (const d of result.deadLetters) recordDeadLetter(topic, d.stage, 1);
  }

  /**
   * The relay's event log, counting what each publish delivered (after it resolved): messages per
   * topic, and the relay's dead letters (messages to deadLetterTopic) by the topic their event
   * type routes to (topicOf; 'unknown' when the type has no route, a usual reason to fail encoding).
   */
  function instrumentEventLog(log: EventLog, options: { deadLetterTopic: string; topicOf?: (eventType: string) => string }): EventLog {
    const sourceTopic = (m: LogMessage): string => {
      try {
        const eventType = (JSON.parse(m.value.toString('utf8')) as { row?: { event_type?: unknown } }).row?.event_type;
        return typeof eventType === 'string' && options.topicOf ? options.topicOf(eventType) : 'unknown';
      } catch {
        return 'unknown';
      }
    };
    return {
      async publish(messages) {
        await log.publish(messages);
        const perTopic = new Map<string, number>();
        for (const m of messages) {
          if (m.topic === options.deadLetterTopic) recordDeadLetter(sourceTopic(m), 'relay.encode');
          else perTopic.set(m.topic, (perTopic.get(m.topic) ?? 0) + 1);
        }
        for (const [topic, n] of perTopic) recordRelayed(topic, n);
      },
      close: () => log.close(),
    };
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

  /** The figures of the log line: totals per topic (and stage, partition) and the backlog. */
  async function snapshot(): Promise<PipelineFigures> {
    type Labels = Partial<Record<string, string | number>>;
    const byLabel = async (metric: { get(): Promise<{ values: { labels: Labels; value: number }[] }> }, keyOf: (labels: Labels) => string) => {
      const out: Record<string, number> = {};
      for (const v of (await metric.get()).values) out[keyOf(v.labels)] = v.value;
      return out;
    };
    const batches = (await batchLoad.get()).values;
    const sumOf = (name: string) => batches.filter((v) => v.metricName === name).reduce((s, v) => s + v.value, 0);
    const backlog = db ? await readBacklog() : undefined;
    return {
      relayed: await byLabel(relayed, (l) => String(l.topic)),
      loaded: await byLabel(loaded, (l) => String(l.topic)),
      deadLettered: await byLabel(deadLettered, (l) => `${l.topic}/${l.stage}`),
      consumerLag: await byLabel(consumerLag, (l) => `${l.topic}/${l.partition}`),
      batchLoads: {
        count: sumOf(`${METRIC_NAMES.batchLoad}_count`),
        seconds: Number(sumOf(`${METRIC_NAMES.batchLoad}_sum`).toFixed(3)),
        retries: Object.values(await byLabel(batchRetries, (l) => String(l.topic))).reduce((s, n) => s + n, 0),
      },
      ...(db ? { backlog: backlog ?? { events: NaN, oldestAgeSeconds: NaN } } : {}),
    };
  }

  return {
    registry,
    recordRelayed,
    recordLoaded,
    recordDeadLetter,
    setConsumerLag,
    observeBatchLoad,
    recordBatchRetry,
    recordLoadResult,
    instrumentEventLog,
    instrumentLoader,
    loaderObserver,
    snapshot,
  };
}

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

export interface MetricsServer {
  /** http://host:port, with the port actually bound (port 0 picks a free one). */
  url: string;
  close(): Promise<void>;
}

/**
 * GET /metrics (Prometheus text format) and GET /healthz for the relay and loader processes,
 * which have no HTTP server of their own. healthy() (optional) makes /healthz answer 503 when false.
 */
export async function serveMetrics(deps: {
  registry: Registry;
  host: string;
  port: number;
  logger?: Logger;
  healthy?: () => boolean | Promise<boolean>;
}): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain; charset=utf-8', 'Method Not Allowed\n');
    if (path === '/metrics') {
      deps.registry.metrics().then(
        (text) => send(200, deps.registry.contentType, text),
        (error: unknown) => {
          deps.logger?.error({ err: error }, 'metrics could not be collected');
          send(500, 'text/plain; charset=utf-8', 'metrics could not be collected\n');
        },
      );
      return;
    }
    if (path === '/healthz') {
      Promise.resolve(deps.healthy ? deps.healthy() : true).then(
        (ok) => send(ok ? 200 : 503, 'text/plain; charset=utf-8', ok ? 'ok\n' : 'unhealthy\n'),
        () => send(503, 'text/plain; charset=utf-8', 'unhealthy\n'),
      );
      return;
    }
    send(404, 'text/plain; charset=utf-8', 'Not Found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.port, deps.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = deps.host.includes(':') ? `[${deps.host}]` : deps.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  deps.logger?.info({ url: `${url}/metrics` }, 'metrics served');
  return {
    url,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
