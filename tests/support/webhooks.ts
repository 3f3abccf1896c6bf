/**
 * Outgoing webhooks in the tests: the app with its webhook settings, an attributed sale, and the
 * stream half in this process (relay to the dispatcher's log, the delivery worker) on a real database.
 */
import type { FastifyInstance } from 'fastify';
import { sql, type Database } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import type { Resolver } from '../../core/outbound-address.js';
import { createSecretBox } from '../../core/secret-box.js';
import { buildApp } from '../../ingest/app.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import type { EventLog, LogMessage } from '../../processors/event-log/event-log.js';
import type { OutboxRow } from '../../schemas/event-contract.js';
import { createDispatcher, webhookEventLog } from '../../processors/webhooks/dispatcher.js';
import { createSender } from '../../processors/webhooks/sender.js';
import { startDeliveryWorker, type DeliveryWorker } from '../../processors/webhooks/worker.js';
import { DOCS_BASE_URL, FEE_BPS, PROCESSOR_SECRETS, TEST_SECRETS_KEY, freshIp, type TestProgram } from './app.js';

export const testBox = () => createSecretBox(TEST_SECRETS_KEY);

export async function buildWebhookApp(db: Database, webhooks: { allowPrivateUrls: boolean; resolve?: Resolver }, clock?: () => number): Promise<FastifyInstance> {
  const app = await buildApp({
    db,
    rateLimits: memoryRateLimitStore(),
    clock,
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    trustProxy: ['127.0.0.1'],
    tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    processorWebhookSecrets: () => PROCESSOR_SECRETS,
    secretBox: testBox(),
    webhooks,
  });
  await app.ready();
  return app;
}

/** A click, a lead and a sale of the program's partner: sale.recorded, commission.created and lead.created. */
export async function attributedSale(app: FastifyInstance, program: TestProgram, tag: string, amountCents = 10_000): Promise<{ saleId: string; transactionId: string }> {
  const post = async (url: string, payload: object, key?: string) => {
    const res = await app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
    return res.json();
  };
  const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` });
  await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: `wh-${tag}` }, program.apiKey);
  const sale = await post('/api/v1/track/sale', { transaction_id: `wh-${tag}`, amount_cents: amountCents, customer_key: `wh-${tag}` }, program.apiKey);
  return { saleId: sale.data.sale_id, transactionId: `wh-${tag}` };
}

const unrelayed = sql(
  'test.webhooks_unrelayed',
  `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
     FROM outbox WHERE relayed_at IS NULL ORDER BY txid, id`,
);
const markRelayed = sql('test.webhooks_mark', `UPDATE outbox SET relayed_at = now() WHERE id = ANY ($1::bigint[])`);

export interface InProcessWebhooks {
  /** Relays the outbox to the dispatcher until it is empty. */
  relay(): Promise<void>;
  worker: DeliveryWorker;
  stop(): Promise<void>;
}

/** Relay, dispatcher and worker of the embedded mode, on this database. */
export function startInProcessWebhooks(db: Database, o: { allowPrivate: boolean; resolve?: Resolver; timeoutMs?: number; perEndpoint?: number; ca?: string; random?: () => number }): InProcessWebhooks {
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const sender = createSender({
    allowPrivate: o.allowPrivate,
    resolve: o.resolve ?? (async () => ['127.0.0.1']),
    timeoutMs: o.timeoutMs ?? 2_000,
    maxSocketsPerEndpoint: o.perEndpoint ?? 10,
    ca: o.ca,
  });
  const worker = startDeliveryWorker({ db, sender, box: testBox(), logger, perEndpoint: o.perEndpoint, timeoutMs: o.timeoutMs ?? 2_000, pollIntervalMs: 50, random: o.random });
  // Made at the first relay: pings and redeliveries need no codec.
  let log: EventLog | undefined;
  let encode: ((row: OutboxRow) => LogMessage) | undefined;
  return {
    worker,
    /**
     * The relay's publish and mark, without its wait for older transactions to end: every write of
     * these tests has committed, and on a Postgres server shared with other work (a benchmark's long
     * transaction) that wait would stall them (the relay itself is tested in tests/processors/relay.test.ts).
     */
    async relay() {
      if (!log || !encode) {
        const codec = createAvroCodec();
        log = webhookEventLog(createDispatcher({ db, codec, onEnqueued: () => worker.wake() }));
        encode = codec.message;
      }
      const rows = await db.many<OutboxRow>(unrelayed);
      if (rows.length === 0) return;
      await log.publish(rows.map(encode));
      await db.many(markRelayed, [rows.map((r) => r.id)]);
    },
    async stop() {
      await worker.stop();
      sender.close();
    },
  };
}

/** Waits until check() holds (polling), or fails with what it last saw. */
export async function eventually<T>(check: () => Promise<T> | T, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const deliveryRows = (db: Database) =>
  db.many<{ id: string; event_type: string; status: string; attempts: number; endpoint_id: string }>(
    sql('test.webhook_deliveries', `SELECT id, event_type, status, attempts, endpoint_id::text FROM webhook_deliveries ORDER BY created_at, id`),
  );
