import type { Logger } from 'pino';
import type { Database } from '../core/db.js';
import type { Warehouse } from '../core/warehouse.js';
import type { AvroCodec } from './avro/codec.js';
import type { EventType } from '../schemas/event-contract.js';
import { createLoader } from './loader/loader.js';
import type { PipelineMetrics } from './metrics/pipeline-metrics.js';
import { createLoadingLog } from './loader/loading-log.js';
import { createRelay, type RelayResult } from './relay.js';
import type { RunningService } from './services.js';
import { DEAD_LETTER_TOPIC } from './event-log/topics.js';
import type { EventLog } from './event-log/event-log.js';
import { fanOutLog } from './webhooks/dispatcher.js';

export { DEAD_LETTER_TOPIC };

/**
 * Relay and loader inside the ingest process without Kafka (the embedded default): the outbox is
 * encoded to the same Avro bytes as in the distributed mode and loaded into the (already migrated)
 * warehouse before it is marked.
 */
export function startEmbeddedPipeline(deps: {
  db: Database;
  warehouse: Warehouse;
  codec: AvroCodec;
  logger: Logger;
  pollIntervalMs?: number;
  metrics?: PipelineMetrics;
  /**
   * The webhook dispatcher's log (processors/webhooks/): a batch is marked once its deliveries are
   * written too. Writing them is one statement; sending is the delivery worker's, never the relay's.
   */
  webhooks?: EventLog;
  onResult?(result: RelayResult): void;
}): RunningService {
  const loader = createLoader({ warehouse: deps.warehouse, decode: deps.codec.decode });
  const loadingLog = createLoadingLog({
    loader: deps.metrics ? deps.metrics.instrumentLoader(loader) : loader,
    deadLetterTopic: DEAD_LETTER_TOPIC,
    reportDeadLetter: (topic, reason, value) =>
      deps.logger.error({ topic, reason, value: value.toString('base64') }, 'event dead-lettered'),
  });
  const loading = deps.metrics
    ? deps.metrics.instrumentEventLog(loadingLog, { deadLetterTopic: DEAD_LETTER_TOPIC, topicOf: (t) => deps.codec.route(t as EventType).topic })
    : loadingLog;
  const log = deps.webhooks ? fanOutLog([loading, deps.webhooks]) : loading;
  const relay = createRelay({ db: deps.db, log, encode: deps.codec.message, deadLetterTopic: DEAD_LETTER_TOPIC });
  const loop = relay.start({
    intervalMs: deps.pollIntervalMs,
    onResult: (result) => {
      if (result.kind === 'retry') deps.logger.error({ err: result.error }, 'relay batch failed; retrying');
      else if (result.kind === 'ok') deps.logger.debug({ relayed: result.relayed }, 'events relayed and loaded');
      deps.onResult?.(result);
    },
  });
  /** Finishes the batch in flight; the caller closes the warehouse. */
  return { stop: () => loop.stop() };
}
