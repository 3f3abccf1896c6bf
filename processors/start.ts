/**
 * The stream processors of a process (main.ts), with their metrics: the embedded pipeline (relay
 * and loader in this process, without Kafka), or the Kafka relay and loader where their roles run.
 */
import type { Logger } from 'pino';
import type { Config } from '../core/config.js';
import type { Database } from '../core/db.js';
import type { Warehouse } from '../core/warehouse.js';
import { createAvroCodec, type AvroCodec } from './avro/codec.js';
import { startCommissionSweeper } from './commission-sweeper.js';
import { startEmbeddedPipeline } from './embedded-pipeline.js';
import { serveMetrics } from './metrics/metrics-server.js';
import { createPipelineMetrics, startMetricsLog, type PipelineMetrics } from './metrics/pipeline-metrics.js';
import type { RunningService } from './services.js';
import { openSecretBox } from '../core/secret-box.js';
import { startWebhooksService, type WebhooksService } from './webhooks/service.js';

export interface ProcessorsDeps {
  config: Pick<Config, 'roles' | 'pipeline' | 'kafka' | 'relay' | 'loader' | 'metrics' | 'webhooks' | 'secrets'>;
  /** The outbox's database, where the relay runs. */
  db: Database | undefined;
  /** The warehouse, where the loader runs. */
  warehouse: Warehouse | undefined;
  logger: Logger;
}

/**
 * The Kafka relay and loader, loaded only when Kafka is configured: their clients take about
 * 0.8 s of a start to load (@platformatic/kafka most of it), which the embedded start never uses.
 */
const loadKafkaServices = () => import('./services.js');

/** The webhooks role (issue 32): its worker, and its dispatcher on Kafka or on the embedded log. */
async function startWebhooks({ config, db, logger }: ProcessorsDeps, codec: AvroCodec): Promise<WebhooksService | undefined> {
  if (!config.roles.has('webhooks') || !db) return undefined;
  // SECRETS_KEY, or the embedded start's own key file (the ingest role seals with the same).
  const box = await openSecretBox(config.secrets);
  return startWebhooksService({ db, webhooks: config.webhooks, kafka: config.kafka, box, codec, logger });
}

async function startServices(deps: ProcessorsDeps, codec: AvroCodec, metrics: PipelineMetrics): Promise<RunningService[]> {
  const { config, db, warehouse, logger } = deps;
  const services: RunningService[] = [];
  const webhooks = await startWebhooks(deps, codec);
  if (config.pipeline.kind === 'embedded' && db && warehouse) {
    services.push(startEmbeddedPipeline({ db, warehouse, codec, logger, metrics, webhooks: webhooks?.log }));
  }
  if (config.kafka && config.roles.has('relay') && db) {
    const { startRelayService } = await loadKafkaServices();
    services.push(await startRelayService({ db, kafka: config.kafka, relay: config.relay, codec, logger, metrics }));
  }
  // Where the relay runs, the commission holds that end are written down (with their events).
  if (config.roles.has('relay') && db) services.push(startCommissionSweeper({ db, logger }));
  if (config.kafka && config.roles.has('loader') && warehouse) {
    const { startLoaderService } = await loadKafkaServices();
    services.push(await startLoaderService({ kafka: config.kafka, loader: config.loader, warehouse, codec, logger, metrics }));
  }
  // Stopped after the relay: what it relayed last still gets its deliveries written and sent.
  if (webhooks) services.push(webhooks);
  return services;
}

/** Undefined where the process runs neither the relay nor the loader. Stopping drains them in order. */
export async function startProcessors(deps: ProcessorsDeps): Promise<RunningService | undefined> {
  const { config, logger } = deps;
  if (!config.roles.has('relay') && !config.roles.has('loader') && !config.roles.has('webhooks')) return undefined;
  // Relay and loader figures: on /metrics when METRICS_PORT is set, and in the logs every minute.
  const metrics = createPipelineMetrics({ db: config.roles.has('relay') ? deps.db : undefined, logger });
  const metricsServer = config.metrics ? await serveMetrics({ registry: metrics.registry, host: config.metrics.host, port: config.metrics.port, logger }) : undefined;
  const stopMetricsLog = startMetricsLog({ metrics, logger, intervalMs: 60_000 });
  const services = await startServices(deps, createAvroCodec(), metrics);
  return {
    async stop() {
      for (const service of services) await service.stop();
      stopMetricsLog();
      await metricsServer?.close();
    },
  };
}
