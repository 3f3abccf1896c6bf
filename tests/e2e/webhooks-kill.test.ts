/**
 * Nothing acknowledged is lost on the way out either (issue 32, point 3): the webhooks role runs as
 * its own process (main.ts webhooks: the Kafka consumer group and the delivery worker) on real
 * Postgres and Kafka, and is killed with SIGKILL while deliveries are in flight. After a restart,
 * every event reaches the receiver at least once, each one verified with the Standard Webhooks
 * reference library.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { startRelayService, type RunningService } from '../../processors/services.js';
import { TEST_SECRETS_KEY, createTestProgram } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { dropTestTopics, kafkaBrokers, testKafkaConfig } from '../support/kafka.js';
import { startReceiver, verify, type Receiver } from '../support/webhook-receiver.js';
import { attributedSale, buildWebhookApp, eventually } from '../support/webhooks.js';

const ROOT = join(import.meta.dirname, '../..');
const BROKERS = kafkaBrokers();
const SALES = 60;
const EVENTS = SALES * 3; // lead.created, sale.recorded, commission.created

function startWebhooksRole(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', 'webhooks'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`webhooks role did not start:\n${output}`)), 120_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Affiliate tracking webhooks running')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.on('exit', (code) => reject(new Error(`webhooks role exited (${code}):\n${output}`)));
  });
}

describe.skipIf(BROKERS.length === 0 || !process.env.DATABASE_URL)('the webhooks role killed mid-delivery (Postgres, Kafka)', () => {
  const kafka = testKafkaConfig(BROKERS);
  let t: TestDatabase | undefined;
  let app: FastifyInstance | undefined;
  let relay: RunningService | undefined;
  let receiver: Receiver | undefined;
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await relay?.stop();
    await receiver?.close();
    await app?.close();
    await t?.drop();
    await dropTestTopics({ ...kafka, groupId: `${kafka.groupId}-webhooks` }).catch(() => undefined);
  });

  it('delivers every event at least once across a SIGKILL', { timeout: 240_000 }, async () => {
    t = await createTestDatabase('postgres');
    app = await buildWebhookApp(t.db, { allowPrivateUrls: true });
    const program = await createTestProgram(app, t.db);
    receiver = await startReceiver();
    // Slow enough that attempts are in flight when the process dies.
    receiver.behaviour.delayMs = 60;
    const created = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${program.programId}/webhook-endpoints`,
      headers: { authorization: `Bearer ${program.workspace.ownerToken}` },
      payload: { url: receiver.url, events: ['lead.created', 'sale.recorded', 'commission.created'] },
    });
    expect(created.statusCode, created.body).toBe(200);
    const secret = created.json().data.secret as string;

    const env = {
      DATABASE_URL: t.url!,
      KAFKA_BROKERS: BROKERS.join(','),
      KAFKA_TOPIC_PREFIX: kafka.topicPrefix,
      KAFKA_CLIENT_ID: kafka.clientId,
      WEBHOOKS_GROUP_ID: `${kafka.groupId}-webhooks`,
      SECRETS_KEY: TEST_SECRETS_KEY.toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WEBHOOK_TIMEOUT_MS: '1000',
    };
    child = await startWebhooksRole(env);
    relay = await startRelayService({ db: t.db, kafka, relay: { batchSize: 50, pollIntervalMs: 50 }, codec: createAvroCodec(), logger: createLogger('silent') });

    for (let i = 0; i < SALES; i += 1) await attributedSale(app, program, `kill-${Date.now()}-${i}`);
    await eventually(() => receiver!.received.length, (n) => n >= 30, 60_000);
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    const atKill = receiver.received.length;
    expect(atKill).toBeLessThan(EVENTS);

    child = await startWebhooksRole(env);
    const ids = () => new Set(receiver!.received.map((r) => String(r.headers['webhook-id'])));
    await eventually(() => ids().size, (n) => n >= EVENTS, 120_000);
    // Every delivery verifies, and every event of the outbox that maps to a webhook reached it.
    const verified = receiver.received.map((r) => verify(secret, r));
    expect(new Set(verified.map((v) => v.id)).size).toBe(EVENTS);
    const outbox = await t.db.many<{ id: string }>(
      sql('test.kill_outbox', `SELECT event_id::text AS id FROM outbox WHERE event_type IN ('sale.recorded', 'commission.created') OR (event_type = 'customer.changed' AND payload->>'change' = 'lead')`),
    );
    expect(outbox).toHaveLength(EVENTS);
    expect(outbox.every((row) => ids().has(row.id))).toBe(true);
    await eventually(
      () => t!.db.many<{ status: string; n: number }>(sql('test.kill_status', `SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status`)),
      (rows) => rows.length === 1 && rows[0]!.status === 'delivered' && rows[0]!.n === EVENTS,
      30_000,
    );
  });
});
