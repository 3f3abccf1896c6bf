/**
 * Freshness, per client and warehouse: ingest, relay and loader processes at their default settings; clicks over
 * HTTP paced at BENCH_RATE per second for BENCH_SECONDS; for each acknowledged click, the time from
 * its 200 to its row's loaded_at in the warehouse.
 */
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import { clientIps, type ClientIps } from '../client-ips.js';
import { fmtFinite as fmt, log } from '../output.js';
import type { Child } from '../processes.js';
import { cpuLine, cpuSnapshot, cpuUse, type CpuUse } from './cpu.js';
import { drain, loaderJoined, markAllRelayed } from './drain.js';
import type { Bench } from './lifecycle.js';
import { HOST, startIngest, startRelay, startService, stopService } from './services.js';
import type { Client } from './settings.js';
import { runWarehouse, warehouseLabel, type WarehouseKind } from './warehouses.js';

export interface FreshnessRun {
  client: Client;
  warehouse: WarehouseKind;
  sent: number;
  acked: number;
  failed: number;
  /** Requests per second actually sent. */
  sentPerS: number;
  httpP99Ms: number;
  found: number;
  freshnessMs: { p50: number; p95: number; p99: number; max: number; min: number };
  cpu: CpuUse;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Clicks paced at `rate` per second for `seconds`; each acknowledged click id with the time its 200 arrived. */
async function pacedClicks(port: number, affCode: string, rate: number, seconds: number, ips: ClientIps) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const body = JSON.stringify({ affiliate_url: `https://shop.bench.example/?aff=${affCode}` });
  const acked = new Map<string, number>();
  const latencies: number[] = [];
  let failed = 0;
  let inFlight = 0;
  let sent = 0;
  const maxInFlight = 512;
  const post = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const req = request(
        { agent, host: HOST, port, method: 'POST', path: '/api/v1/track/click', headers: { 'content-type': 'application/json', 'x-forwarded-for': ips.next() }, timeout: 10_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const at = Date.now();
            latencies.push(performance.now() - started);
            const id = res.statusCode === 200 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { click_id?: string }).click_id : undefined;
            if (id) acked.set(id, at);
            else failed += 1;
            resolve();
          });
        },
      );
      req.on('error', () => {
        failed += 1;
        resolve();
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end(body);
    });
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  for (;;) {
    const elapsed = performance.now() - started;
    if (elapsed >= seconds * 1000) break;
    const due = Math.floor((elapsed * rate) / 1000);
    while (sent < due && inFlight < maxInFlight) {
      sent += 1;
      inFlight += 1;
      const p = post().finally(() => {
        inFlight -= 1;
        pending.delete(p);
      });
      pending.add(p);
    }
    await sleep(2);
  }
  const sendSeconds = (performance.now() - started) / 1000;
  await Promise.all(pending);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { acked, sent, failed, sentPerS: sent / sendSeconds, httpP99Ms: percentile(latencies, 99) };
}

async function freshness(bench: Bench, client: Client, kind: WarehouseKind, ingest: { ingest: Child; port: number }, affCode: string, ips: ClientIps): Promise<FreshnessRun> {
  const { db, run, settings } = bench;
  const prefix = `${run.prefix}fresh_${client}_${kind}.`;
  const groupId = `${run.prefix}fresh_${client}_${kind}`;
  run.groups.push(groupId);
  const warehouse = await runWarehouse(bench, kind, `fresh_${client}_${kind}`);
  const topics = topicsOf(createAvroCodec(), prefix).events;
  const loader = await startService(bench, 'loader', `loader (freshness, ${client}, ${warehouseLabel(kind)})`, { KAFKA_TOPIC_PREFIX: prefix, LOADER_GROUP_ID: groupId, ...warehouse.env });
  const relay = await startRelay(bench, `relay (freshness, ${client})`, { KAFKA_CLIENT: client, KAFKA_TOPIC_PREFIX: prefix });
  await loaderJoined(bench, groupId);
  const before = await cpuSnapshot(db, { ingest: ingest.ingest, relay: relay.child, loader: loader.child }, warehouse.cpuPids());
  const clicks = await pacedClicks(ingest.port, affCode, settings.rate, settings.seconds, ips);
  const after = await cpuSnapshot(db, { ingest: ingest.ingest, relay: relay.child, loader: loader.child }, warehouse.cpuPids());
  await drain(bench, { relay, loader, groupId, topics });
  await stopService(run, relay);
  await stopService(run, loader);
  const loaded = new Map(await warehouse.clicks());
  const delays: number[] = [];
  for (const [id, ackedAt] of clicks.acked) {
    const at = loaded.get(id);
    if (at !== undefined) delays.push(at - ackedAt);
  }
  delays.sort((a, b) => a - b);
  return {
    client,
    warehouse: kind,
    sent: clicks.sent,
    acked: clicks.acked.size,
    failed: clicks.failed,
    sentPerS: clicks.sentPerS,
    httpP99Ms: clicks.httpP99Ms,
    found: delays.length,
    freshnessMs: { p50: percentile(delays, 50), p95: percentile(delays, 95), p99: percentile(delays, 99), max: delays.at(-1) ?? Number.NaN, min: delays[0] ?? Number.NaN },
    cpu: cpuUse(before, after),
  };
}

/** One freshness run per client into chDB, and with the first client into the server, against one ingest process. */
export async function runFreshness(bench: Bench, affCode: string): Promise<FreshnessRun[]> {
  const { settings } = bench;
  await markAllRelayed(bench.db);
  const ingest = await startIngest(bench);
  const ips = clientIps();
  const runs: FreshnessRun[] = [];
  const pairs = settings.warehouses.flatMap((kind) => (kind === 'chdb' ? settings.clients : settings.clients.slice(0, 1)).map((client) => [client, kind] as const));
  for (const [client, kind] of pairs) {
    log(`\nfreshness, ${client}, into ${warehouseLabel(kind)}: clicks at ${fmt(settings.rate)}/s for ${settings.seconds} s`);
    const run = await freshness(bench, client, kind, ingest, affCode, ips);
    runs.push(run);
    const f = run.freshnessMs;
    log(`  sent ${fmt(run.sent)} (${fmt(run.sentPerS)}/s), acknowledged ${fmt(run.acked)}, failed ${fmt(run.failed)}, HTTP p99 ${fmt(run.httpP99Ms, 1)} ms`);
    log(`  found ${fmt(run.found)} of ${fmt(run.acked)} acknowledged clicks in the warehouse`);
    log(`  200 -> row inserted: p50 ${fmt(f.p50)} ms, p95 ${fmt(f.p95)} ms, p99 ${fmt(f.p99)} ms, max ${fmt(f.max)} ms (min ${fmt(f.min)} ms)`);
    log(`  ${cpuLine(run.cpu, run.acked, ['ingest', 'relay', 'loader', 'clickhouse', 'postgres', 'broker'])}`);
  }
  return runs;
}
