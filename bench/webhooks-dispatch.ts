/**
 * npm run bench:dispatch (issue 32, point 7): the outgoing webhook dispatcher against a local
 * receiver in its own process, on a throw-away PostgreSQL database.
 *
 *   1. Throughput: BENCH_DELIVERIES deliveries (default 20,000; sale.recorded bodies) waiting for
 *      BENCH_ENDPOINTS endpoints (default 4) of one receiver; the delivery worker sends and records
 *      them all. Printed: deliveries/s, beside the target (1,000/s) and the baseline of the same
 *      run: the same signed POSTs at the same concurrency from a bare keep-alive client, no database
 *      (what HTTP alone allows here).
 *   2. Latency: sale.recorded events committed to the outbox at BENCH_RATE a second (default 100)
 *      for BENCH_SECONDS (default 20), through the embedded path (relay polling every 100 ms, the
 *      dispatcher, the worker). Printed: p50/p99/max from each event's commit to its arrival at the
 *      receiver, beside the target (p99 under 2 s) and the baseline of the same run: commit to the
 *      relay's hand-over to the dispatcher (the part before any webhook code).
 *
 * Settings: BENCH_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres), and the above.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { openDatabase, sql, type Database } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { createSecretBox } from '../core/secret-box.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { systemContext } from '../domain/audit/audit.js';
import { createEndpoint } from '../domain/webhooks/endpoints.js';
import { createAvroCodec } from '../processors/avro/codec.js';
import { DEAD_LETTER_TOPIC } from '../processors/event-log/topics.js';
import { createRelay } from '../processors/relay.js';
import { createDispatcher, webhookEventLog } from '../processors/webhooks/dispatcher.js';
import { enqueue, type QueuedEvent } from '../processors/webhooks/queue.js';
import { createSender } from '../processors/webhooks/sender.js';
import { startDeliveryWorker } from '../processors/webhooks/worker.js';
import { webhookEventsOf } from '../schemas/webhooks.js';
import { fmt, loadText, log, ratio } from './output.js';
import { createBenchDatabase, databaseUrl, DEFAULT_ADMIN_URL, dropBenchDatabase, intSetting, seedProgram } from './setup.js';

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? DEFAULT_ADMIN_URL;
const DELIVERIES = intSetting('BENCH_DELIVERIES', 20_000, 100, 1_000_000);
const ENDPOINTS = intSetting('BENCH_ENDPOINTS', 4, 1, 100);
const RATE = intSetting('BENCH_RATE', 100, 1, 10_000);
const SECONDS = intSetting('BENCH_SECONDS', 20, 1, 600);
const PER_ENDPOINT = 10;
const TARGET_PER_SECOND = 1_000;
const TARGET_P99_MS = 2_000;

const logger = createLogger('warn');
const box = createSecretBox(randomBytes(32));
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

interface Receiver {
  port: number;
  child: ChildProcess;
  ask<T>(cmd: string): Promise<T>;
}

async function startReceiver(): Promise<Receiver> {
  const child = fork(fileURLToPath(new URL('./webhooks-dispatch/receiver.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  return {
    port,
    child,
    ask: <T>(cmd: string) =>
      new Promise<T>((resolve) => {
        child.once('message', (m) => resolve(m as T));
        child.send({ cmd });
      }),
  };
}

/** A sale.recorded outbox payload (what record_sale writes), for a program. */
function salePayload(programId: number, n: number) {
  const at = new Date().toISOString();
  return {
    sale_id: randomUUID(), transaction_id: `bench-${n}-${randomBytes(4).toString('hex')}`, program_id: programId, customer_id: n, partner_id: 1,
    amount_cents: 4_999, currency: 'USD', occurred_at: at, status: 'paid', is_recurring: false, test: false, created_at: at,
  };
}

async function throughput(db: Database, receiver: Receiver, programId: number, secrets: string[]) {
  // Bodies as the dispatcher makes them.
  const events: QueuedEvent[] = Array.from({ length: DELIVERIES / ENDPOINTS }, (_, i) => {
    const eventId = randomUUID();
    const payload = salePayload(programId, i);
    const [mapped] = webhookEventsOf('sale.recorded', { eventId, programId, occurredAt: payload.occurred_at, test: false, payload: payload as never });
    return { eventId: mapped!.id, programId, type: mapped!.type, body: mapped!.body };
  });
  for (let i = 0; i < events.length; i += 1_000) await enqueue(db, events.slice(i, i + 1_000));
  const sender = createSender({ allowPrivate: true, resolve: async () => ['127.0.0.1'], timeoutMs: 10_000, maxSocketsPerEndpoint: PER_ENDPOINT });
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const worker = startDeliveryWorker({ db, sender, box, logger, perEndpoint: PER_ENDPOINT, timeoutMs: 10_000 });
  const delivered = sql('bench.delivered', `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'delivered'`);
  for (;;) {
    const n = (await db.one<{ n: number }>(delivered))!.n;
    if (n >= events.length * ENDPOINTS) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const seconds = (performance.now() - started) / 1_000;
  const cpu = process.cpuUsage(cpuBefore);
  await worker.stop();
  sender.close();

  // The baseline: the same signed POSTs at the same concurrency, no database.
  const agent = new http.Agent({ keepAlive: true, maxSockets: PER_ENDPOINT * ENDPOINTS });
  const signer = new Webhook(secrets[0]!);
  const post = (body: string, id: string) =>
    new Promise<void>((resolve, reject) => {
      const now = new Date();
      const request = http.request({ host: '127.0.0.1', port: receiver.port, path: '/hooks', method: 'POST', agent, headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': signer.sign(id, now, body) } }, (response) => {
        response.resume();
        response.on('end', resolve);
      });
      request.on('error', reject);
      request.end(body);
    });
  const total = events.length * ENDPOINTS;
  let next = 0;
  const baseStarted = performance.now();
  await Promise.all(
    Array.from({ length: PER_ENDPOINT * ENDPOINTS }, async () => {
      while (next < total) {
        const e = events[next++ % events.length]!;
        await post(e.body, e.eventId);
      }
    }),
  );
  const baseSeconds = (performance.now() - baseStarted) / 1_000;
  agent.destroy();
  const rate = total / seconds;
  const baseRate = total / baseSeconds;
  log(`throughput: ${fmt(total)} deliveries to ${ENDPOINTS} endpoints (${PER_ENDPOINT} in flight each)`);
  log(`  dispatcher   ${fmt(rate)} deliveries/s   (target ≥ ${fmt(TARGET_PER_SECOND)}/s: ${rate >= TARGET_PER_SECOND ? 'met' : 'NOT met'})`);
  log(`  baseline     ${fmt(baseRate)} POSTs/s (bare keep-alive client, no database)   dispatcher/baseline ${ratio(rate, baseRate)}`);
  log(`  dispatcher CPU in this process: ${fmt((cpu.user + cpu.system) / 1_000 / total * 1_000, 0)} µs a delivery`);
}

async function latency(db: Database, receiver: Receiver, programId: number) {
  await receiver.ask('reset');
  const codec = createAvroCodec();
  const sender = createSender({ allowPrivate: true, resolve: async () => ['127.0.0.1'], timeoutMs: 10_000, maxSocketsPerEndpoint: PER_ENDPOINT });
  const worker = startDeliveryWorker({ db, sender, box, logger, perEndpoint: PER_ENDPOINT, timeoutMs: 10_000 });
  const dispatcher = createDispatcher({ db, codec, onEnqueued: () => worker.wake() });
  const handedOver = new Map<string, number>();
  const inner = webhookEventLog(dispatcher);
  const relay = createRelay({
    db,
    log: {
      async publish(messages) {
        const at = Date.now();
        for (const m of messages) handedOver.set(codec.decode(m.value).value.event_id, at);
        await inner.publish(messages);
      },
      close: async () => {},
    },
    encode: codec.message,
    deadLetterTopic: DEAD_LETTER_TOPIC,
  });
  const loop = relay.start({ intervalMs: 100 });
  const insert = sql(
    'bench.outbox_sale',
    `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload) VALUES ('sale.recorded', $1, $2, false, now(), $3) RETURNING event_id::text`,
  );
  const committed = new Map<string, number>();
  const total = RATE * SECONDS;
  const started = Date.now();
  const writes: Promise<void>[] = [];
  for (let i = 0; i < total; i += 1) {
    const due = started + (i * 1_000) / RATE;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const payload = salePayload(programId, i);
    writes.push(
      db.one<{ event_id: string }>(insert, [`sale:${payload.sale_id}`, programId, JSON.stringify(payload)]).then((row) => {
        committed.set(row!.event_id, Date.now());
      }),
    );
  }
  await Promise.all(writes);
  let arrivals: Map<string, number>;
  for (const deadline = Date.now() + 30_000; ; ) {
    arrivals = new Map((await receiver.ask<{ arrivals: [string, number][] }>('arrivals')).arrivals);
    if (arrivals.size >= total * ENDPOINTS || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await loop.stop();
  await worker.stop();
  sender.close();
  const paths = Array.from({ length: ENDPOINTS }, (_, i) => `/hooks/${i}`);
  const latencies = [...committed].flatMap(([id, at]) => paths.map((path) => (arrivals.get(`${id} ${path}`) ?? NaN) - at)).sort((a, b) => a - b);
  const baseline = [...committed].map(([id, at]) => (handedOver.get(id) ?? NaN) - at).sort((a, b) => a - b);
  const lost = latencies.filter((l) => Number.isNaN(l)).length;
  const p99 = percentile(latencies, 99);
  log(`latency: ${fmt(total)} sale.recorded events at ${RATE}/s for ${SECONDS} s, each to ${ENDPOINTS} endpoints; commit to arrival, per delivery`);
  log(`  dispatcher   p50 ${fmt(percentile(latencies, 50))} ms   p99 ${fmt(p99)} ms   max ${fmt(latencies.at(-1) ?? NaN)} ms   (target p99 < ${fmt(TARGET_P99_MS)} ms: ${p99 < TARGET_P99_MS ? 'met' : 'NOT met'})${lost ? `   ${lost} NOT ARRIVED` : ''}`);
  log(`  baseline     p50 ${fmt(percentile(baseline, 50))} ms   p99 ${fmt(percentile(baseline, 99))} ms   (commit to the relay's hand-over, before any webhook code)`);
}

async function main() {
  const name = `ats_bench_${randomBytes(5).toString('hex')}`;
  await createBenchDatabase(ADMIN_URL, name);
  const db = await openDatabase({ kind: 'postgres', url: databaseUrl(ADMIN_URL, name), poolSize: 10 });
  const receiver = await startReceiver();
  try {
    await migrate(db);
    const workspaceId = await createWorkspace(db, 'Bench');
    await addMember(db, workspaceId, 'owner@bench.example', 'owner');
    const program = await seedProgram(db, workspaceId, 'dispatch');
    const policy = { allowPrivate: true, resolve: async () => ['127.0.0.1'] };
    const secrets: string[] = [];
    for (let i = 0; i < ENDPOINTS; i += 1) {
      const created = await createEndpoint(db, box, policy, program.programId, { url: `http://127.0.0.1:${receiver.port}/hooks/${i}`, events: ['sale.recorded'], description: null }, systemContext('bench'));
      secrets.push(created.secret);
    }
    log(`webhook dispatch benchmark (load average ${loadText()})`);
    await throughput(db, receiver, program.programId, secrets);
    await latency(db, receiver, program.programId);
    log(`load average after: ${loadText()}`);
  } finally {
    receiver.child.disconnect();
    await db.close();
    await dropBenchDatabase(ADMIN_URL, name);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
