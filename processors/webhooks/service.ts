/**
 * The webhooks role (issue 32): the delivery worker, and the dispatcher on the event log of the
 * mode: Kafka's consumer group in the distributed mode, or, embedded, a log the relay publishes to
 * beside the loader (embedded-pipeline.ts takes `log`).
 */
import type { Logger } from 'pino';
import type { KafkaConfig, WebhooksConfig } from '../../core/config.js';
import type { Database } from '../../core/db.js';
import { systemResolver, type Resolver } from '../../core/outbound-address.js';
import type { SecretBox } from '../../core/secret-box.js';
import type { AvroCodec } from '../avro/codec.js';
import type { EventLog } from '../event-log/event-log.js';
import { createDispatcher, webhookEventLog, type Dispatcher } from './dispatcher.js';
import { createSender } from './sender.js';
import { startDeliveryWorker, type DeliveryWorker } from './worker.js';

export interface WebhooksServiceDeps {
  db: Database;
  webhooks: WebhooksConfig;
  /** The distributed mode's log; undefined: the embedded log (the caller hands `log` to the relay). */
  kafka: KafkaConfig | undefined;
  box: SecretBox;
  codec: AvroCodec;
  logger: Logger;
  /** DNS (tests give their own answers to check the connect-time refusal). */
  resolve?: Resolver;
  /** Extra certificate authorities (tests' local HTTPS receivers; NODE_EXTRA_CA_CERTS does it for a process). */
  ca?: string | Buffer;
  /** Attempts in flight per endpoint (default 10). */
  perEndpoint?: number;
}

export interface WebhooksService {
  dispatcher: Dispatcher;
  worker: DeliveryWorker;
  /** The embedded mode's log for the relay (undefined with Kafka). */
  log: EventLog | undefined;
  stop(): Promise<void>;
}

export async function startWebhooksService(deps: WebhooksServiceDeps): Promise<WebhooksService> {
  const sender = createSender({
    allowPrivate: deps.webhooks.allowPrivateUrls,
    resolve: deps.resolve ?? systemResolver,
    timeoutMs: deps.webhooks.timeoutMs,
    maxSocketsPerEndpoint: deps.perEndpoint ?? 10,
    ca: deps.ca,
  });
  const worker = startDeliveryWorker({
    db: deps.db,
    sender,
    box: deps.box,
    logger: deps.logger,
    perEndpoint: deps.perEndpoint,
    timeoutMs: deps.webhooks.timeoutMs,
  });
  const dispatcher = createDispatcher({ db: deps.db, codec: deps.codec, onEnqueued: () => worker.wake() });
  let stopConsumer: (() => Promise<void>) | undefined;
  if (deps.kafka) {
    // Loaded only with Kafka, as the relay and loader are (processors/start.ts says why).
    const [{ createTopics }, { createKafkajsClient }, { topicsOf }, { startKafkaDispatcher }] = await Promise.all([
      import('../services.js'),
      import('../event-log/kafka.js'),
      import('../event-log/topics.js'),
      import('./kafka-dispatcher.js'),
    ]);
    await createTopics(deps.kafka, deps.codec, deps.logger);
    const topics = topicsOf(deps.codec, deps.kafka.topicPrefix);
    const consumer = await startKafkaDispatcher({
      kafka: createKafkajsClient(deps.kafka, deps.logger, '-webhooks'),
      groupId: deps.webhooks.groupId,
      topics: dispatcher.topics.map((t) => topics.name(t)),
      dispatcher,
      logger: deps.logger,
    });
    stopConsumer = () => consumer.stop();
  }
  return {
    dispatcher,
    worker,
    log: deps.kafka ? undefined : webhookEventLog(dispatcher),
    async stop() {
      await stopConsumer?.();
      await worker.stop();
      sender.close();
    },
  };
}
