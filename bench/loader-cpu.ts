/**
 * CPU per 1,000 loaded events (npx tsx bench/loader-cpu.ts): the loader (processors/loader/loader.ts) and
 * chDB in this one process, no Kafka, so the figure is the loader's own work: decode, map, the
 * warehouse inserts (chDB's parsing and part writing run on its threads, counted by
 * process.cpuUsage()) and the rollup. CPU time is far steadier than a rate on a shared machine.
 *
 * The events are real: customer journeys over HTTP (buildApp on a throw-away PostgreSQL database,
 * every event type), their outbox rows cloned to BENCH_EVENTS distinct events and Avro-encoded as
 * the relay does. They are cached in BENCH_MESSAGES (default $TMPDIR/ats-loader-cpu-<events>.json)
 * so a before/after pair loads the same bytes. Each round loads them all into a fresh chDB
 * directory in loads of BENCH_LOAD events (default 10,000: one load takes one batch per topic,
 * as the Kafka loader combines the partitions of a fetch), and reports CPU during the loads and
 * during BENCH_SETTLE_MS after (background merges). chDB binds one directory per process, so each
 * round runs in a child process; rounds: BENCH_ROUNDS (default 3), median reported.
 * Each round also prints the CPU of each thread by name (BENCH_TIDS=1: V8's and libuv's `node`
 * threads one by one) and how long the main thread sat idle waiting for chDB; BENCH_MARKS=1 writes
 * the loads' start and end (CLOCK_MONOTONIC, ns) to stderr, for `perf record -k CLOCK_MONOTONIC`
 * and `perf report --time`. BENCH_CPU_PROF=<dir> writes each round's profile there. BENCH_COMPARE=<another checkout> (e.g.
 * `git archive main | tar -x -C /tmp/base`, node_modules linked, this script copied into its
 * bench/) runs its loader in alternate rounds, for a before/after on one machine state.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openDatabase, sql, type Database } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { openWarehouse, type Warehouse } from '../core/warehouse.js';
import { migrateWarehouse } from '../core/warehouse-migrate.js';
import { buildApp } from '../ingest/app.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { memoryRateLimitStore } from '../ingest/http/rate-limit.js';
import { createAvroCodec } from '../processors/avro/codec.js';
import { createLoader, type LoaderBatch } from '../processors/loader/loader.js';
import type { OutboxRow } from '../schemas/event-contract.js';
import { createBenchDatabase, databaseUrl, DEFAULT_ADMIN_URL, dropBenchDatabase, intSetting, seedProgram, type SeededProgram } from './setup.js';
import { log } from './output.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const settings = {
  adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
  events: intSetting('BENCH_EVENTS', 60_000, 1_000, 2_000_000),
  load: intSetting('BENCH_LOAD', 10_000, 100, 1_000_000),
  rounds: intSetting('BENCH_ROUNDS', 3, 1, 20),
  settleMs: intSetting('BENCH_SETTLE_MS', 2_000, 0, 60_000),
};
const messagesFile = process.env.BENCH_MESSAGES || join(tmpdir(), `ats-loader-cpu-${settings.events}.json`);

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** CPU ms of each of this process's threads by name (/proc on Linux): the main thread, V8's, chDB's. */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  const tick = 1000 / 100; // USER_HZ
  for (const task of tasks) {
    try {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = task === String(process.pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '#');
      const key = name === 'node' && process.env.BENCH_TIDS ? `node/${task}` : name;
      out.set(key, (out.get(key) ?? 0) + (Number(fields[11]) + Number(fields[12])) * tick);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}
const threadDelta = (before: Map<string, number>, after: Map<string, number>) =>
  Object.fromEntries([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]).filter(([, v]) => (v as number) > 0).sort((a, b) => (b[1] as number) - (a[1] as number)));

interface StoredMessage {
  topic: string;
  key: string | undefined;
  value: string;
}

/** Customer journeys over HTTP (every event type), their outbox cloned to `events` and encoded. */
async function makeMessages(): Promise<StoredMessage[]> {
  const name = `ats_bench_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  await createBenchDatabase(settings.adminUrl, name);
  let db: Database | undefined;
  try {
    db = await openDatabase({ kind: 'postgres', url: databaseUrl(settings.adminUrl, name), poolSize: 4 });
    await migrate(db);
    const workspaceId = await createWorkspace(db, 'Bench workspace');
    await addMember(db, workspaceId, 'owner@bench.example', 'owner', 'Bench owner');
    const programs: SeededProgram[] = [];
    for (const label of ['a', 'b', 'c']) programs.push(await seedProgram(db, workspaceId, label));
    const app = await buildApp({ db, rateLimits: memoryRateLimitStore(), logger: createLogger('silent'), trustProxy: ['127.0.0.1'], tracking: { platformFeeBps: 2_000, docsBaseUrl: 'https://docs.bench.example' } });
    let ip = 0;
    const post = async (url: string, payload: object, key?: string) => {
      ip += 1;
      const res = await app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': `10.9.${ip >> 8}.${ip & 255}`, ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
      return res.json() as Record<string, unknown>;
    };
    for (const program of programs) {
      for (let i = 0; i < 40; i += 1) {
        const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.bench.example/?aff=${program.affCode}`, additional_data: { test_mode: i % 7 === 6 } });
        const customer = `bench-${program.programId}-${i}`;
        await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: customer }, program.apiKey);
        await post('/api/v1/track/sale', { transaction_id: customer, amount_cents: 1_000 + i, customer_key: customer }, program.apiKey);
        if (i % 4 === 0) await post('/api/v1/track/sale', { transaction_id: `${customer}-r`, amount_cents: 500 + i, customer_key: customer, is_recurring: true }, program.apiKey);
        if (i % 3 === 0) await post('/api/v1/track/refund', { transaction_id: customer, reason: i % 2 ? 'refund' : 'chargeback' }, program.apiKey);
      }
    }
    await app.close();
    const rows = await db.many<OutboxRow>(
      sql('bench.loader_cpu_outbox', `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload FROM outbox ORDER BY id`),
    );
    const codec = createAvroCodec();
    const out: StoredMessage[] = [];
    // Clones interleaved like traffic: copy 1 of every event, then copy 2...; each a distinct event (and click).
    for (let copy = 0; out.length < settings.events; copy += 1) {
      for (const row of rows) {
        if (out.length >= settings.events) break;
        const clone: OutboxRow = copy === 0 ? row : { ...row, event_id: randomUUID() };
        if (copy > 0 && row.event_type === 'click.recorded') {
          const clickId = randomUUID();
          clone.aggregate_key = clickId;
          clone.payload = { ...(row.payload as object), click_id: clickId } as OutboxRow['payload'];
        }
        const m = codec.message(clone);
        out.push({ topic: m.topic, key: m.key, value: m.value.toString('base64') });
      }
    }
    return out;
  } finally {
    await db?.close();
    await dropBenchDatabase(settings.adminUrl, name);
  }
}

/** One round, in a child process: every message loaded into a fresh chDB directory. */
async function round(): Promise<void> {
  const stored = JSON.parse(await readFile(messagesFile, 'utf8')) as StoredMessage[];
  const byTopic = new Map<string, LoaderBatch['messages'][number][]>();
  for (const m of stored) {
    const list = byTopic.get(m.topic) ?? [];
    list.push({ offset: String(list.length), key: m.key, value: Buffer.from(m.value, 'base64') });
    byTopic.set(m.topic, list);
  }
  const loads: LoaderBatch[][] = [];
  const share = settings.load / stored.length;
  for (const [topic, list] of byTopic) {
    const per = Math.max(1, Math.ceil(list.length * share));
    for (let i = 0, n = 0; i < list.length; i += per, n += 1) (loads[n] ??= []).push({ topic, partition: 0, messages: list.slice(i, i + per) });
  }
  const dir = await mkdtemp(join(tmpdir(), 'ats-loader-cpu-'));
  try {
    const real = await openWarehouse({ kind: 'chdb', path: dir });
    await migrateWarehouse(real);
    /** Wall time per statement (the warehouse runs one at a time): where a load's time goes. */
    const spent = new Map<string, number>();
    const timed = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
      const t = performance.now();
      try {
        return await run();
      } finally {
        spent.set(what, (spent.get(what) ?? 0) + performance.now() - t);
      }
    };
    const warehouse: Warehouse = {
      kind: real.kind,
      insert: (table, rows, o) => timed(`insert ${table}`, () => real.insert(table, rows, o)),
      query: (q, p) => timed(q.name, () => real.query(q, p)),
      command: (q, p) => timed(q.name, () => real.command(q, p)),
      close: () => real.close(),
    };
    const codec = createAvroCodec();
    const loader = createLoader({ warehouse, decode: codec.decode });
    await sleep(500);
    const threads0 = threadCpu();
    const elu0 = performance.eventLoopUtilization();
    const cpu0 = cpuMs();
    if (process.env.BENCH_MARKS) process.stderr.write(`load start ${process.hrtime.bigint()}\n`);
    const t0 = performance.now();
    let loaded = 0;
    for (const batches of loads) {
      for (const result of await loader.loadMany(batches)) {
        if (result.kind !== 'ok') throw result.error;
        loaded += result.loaded;
      }
    }
    const wall = performance.now() - t0;
    if (process.env.BENCH_MARKS) process.stderr.write(`load end ${process.hrtime.bigint()}\n`);
    const cpu1 = cpuMs();
    const threads = threadDelta(threads0, threadCpu());
    // The main thread's idle time during the loads: waiting for chDB with nothing else to do.
    const mainIdleMs = performance.eventLoopUtilization(elu0).idle;
    await sleep(settings.settleMs);
    const cpu2 = cpuMs();
    await warehouse.close();
    process.stdout.write(JSON.stringify({ loaded, loads: loads.length, wallMs: wall, loadCpuMs: cpu1 - cpu0, settleCpuMs: cpu2 - cpu1, statements: Object.fromEntries(spent), threads, mainIdleMs }) + '\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main() {
  if (!existsSync(messagesFile)) {
    log(`making ${settings.events} events (cached in ${messagesFile})`);
    await writeFile(messagesFile, JSON.stringify(await makeMessages()));
  }
  log(`loader CPU: ${settings.events} events, loads of about ${settings.load}, ${settings.rounds} rounds, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const compare = process.env.BENCH_COMPARE;
  const sides = compare ? [ROOT, compare] : [ROOT];
  const all = new Map<string, { perThousand: number; withSettle: number; rate: number }[]>(sides.map((s) => [s, []]));
  for (let i = 0; i < settings.rounds * sides.length; i += 1) {
    const side = sides[i % sides.length]!;
    const results = all.get(side)!;
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const out = execFileSync(process.execPath, [...prof, '--import', 'tsx', join(side, 'bench', 'loader-cpu.ts'), '--round'], { cwd: side, env: process.env, encoding: 'utf8', maxBuffer: 1 << 24 });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { loaded: number; loads: number; wallMs: number; loadCpuMs: number; settleCpuMs: number; statements: Record<string, number>; threads: Record<string, number>; mainIdleMs: number };
    const perThousand = (r.loadCpuMs / r.loaded) * 1000;
    const withSettle = ((r.loadCpuMs + r.settleCpuMs) / r.loaded) * 1000;
    results.push({ perThousand, withSettle, rate: r.loaded / (r.wallMs / 1000) });
    log(`  ${side === ROOT ? 'this checkout' : side} round ${Math.floor(i / sides.length) + 1}: ${r.loaded} events in ${r.loads} loads, ${(r.wallMs / 1000).toFixed(2)} s (${Math.round(r.loaded / (r.wallMs / 1000))} events/s); ` +
      `CPU ${perThousand.toFixed(1)} ms per 1,000 events, ${withSettle.toFixed(1)} with the ${settings.settleMs} ms after (load ${loadavg()[0]!.toFixed(2)})`);
    log(`    main thread idle (waiting for chDB) ${Math.round(r.mainIdleMs)} ms; CPU ms per thread while loading: ${Object.entries(r.threads ?? {}).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')}`);
    log(`    wall ms per statement kind: ${Object.entries(r.statements).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')}`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [side, results] of all) {
    log(`${side === ROOT ? 'this checkout' : side}: median ${median(results.map((r) => r.perThousand)).toFixed(1)} ms per 1,000 events while loading ` +
      `(${results.map((r) => r.perThousand.toFixed(1)).join(', ')}), ${median(results.map((r) => r.withSettle)).toFixed(1)} with merges after; ` +
      `${Math.round(median(results.map((r) => r.rate)))} events/s; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  }
}

if (process.argv.includes('--round')) {
  round().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
} else {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
