/**
 * Pipeline benchmark (npm run bench:pipeline). Not a test: it reports throughput and freshness of
 * the distributed pipeline (outbox -> relay -> Kafka -> loader -> warehouse) and fails (exit 1)
 * only when an event or an acknowledged click is missing from the warehouse.
 *
 * Needs a real PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres) and
 * a real Kafka (KAFKA_BROKERS, default 127.0.0.1:9092; scripts/kafka-broker.sh start). The
 * warehouse is chDB in temporary directories. Every process is the production one: the relay is
 * `main.ts relay`, the loader `main.ts loader`, the service `main.ts ingest`, each a child process
 * whose CPU time is read from /proc. chDB binds one directory per process, so a run's warehouse is
 * read after its loader stopped, by bench/pipeline-warehouse.ts in a child of its own; timings come
 * from the warehouse's `loaded_at` (insert time) and the outbox's `relayed_at` (start of the
 * relay's transaction), not from polling.
 *
 * 1. Throughput. A throw-away database ats_bench_<hex> gets real traffic over HTTP (buildApp +
 *    inject: clicks, leads, sales, refunds, so every event type), then its outbox is multiplied in
 *    SQL to BENCH_EVENTS events (each clone a distinct event_id; click clones a distinct click_id).
 *    - baseline: the same Avro messages produced (the relay's batch size, kafkajs event log) and
 *      consumed (kafkajs group, commit per batch) with nothing else: the broker's ceiling here;
 *    - relay alone, per client: outbox to Kafka, rate = rows marked per second;
 *    - loader alone (its consumer is kafkajs whatever KAFKA_CLIENT says): from full topics;
 *    - relay and loader together, per client: outbox to rows visible, end to end.
 *    The relay starts gated: the benchmark holds the relay's advisory lock until every process
 *    is up, so start-up costs are outside the figures.
 * 2. Breakdown: the relay and the loader once more, in this process, each step timed
 *    (bench/pipeline-breakdown.ts): Postgres vs encode vs publish, decode vs map vs chDB insert.
 * 3. Freshness, per client: ingest, relay and loader processes at their default settings; clicks
 *    over HTTP paced at BENCH_RATE per second for BENCH_SECONDS; for each acknowledged click, the
 *    time from its 200 to its row's loaded_at in the warehouse.
 *
 * Knobs (all optional): BENCH_EVENTS (default 200000), BENCH_RATE (default 1000), BENCH_SECONDS
 * (default 20), BENCH_CLIENTS (default kafkajs,platformatic), BENCH_PHASES (default
 * throughput,breakdown,freshness), BENCH_CPU_PROF (a directory: relay and loader write CPU profiles there).
 * RELAY_BATCH_SIZE, RELAY_POLL_MS, LOADER_FLUSH_MS, LOADER_MIN_BATCH_BYTES are passed to the
 * children when set (else the service's defaults apply).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig, type KafkaConfig } from '../core/config.js';
import { openDatabase, sql, type Database } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { buildApp } from '../ingest/app.js';
import { issueProgramKey } from '../domain/programs/api-keys.js';
import { createPartner, createProgram } from '../domain/programs/programs.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { memoryRateLimitStore } from '../ingest/http/rate-limit.js';
import { createAvroCodec } from '../processors/avro/codec.js';
import type { LogMessage } from '../processors/event-log/event-log.js';
import type { OutboxRow } from '../schemas/event-contract.js';
import { topicsOf } from '../processors/event-log/topics.js';
import { loaderBreakdown, relayBreakdown } from './pipeline-breakdown.js';
import { BrokerAdmin, CONSUME_ROUNDS, kafkaConfig, runBaseline, type BaselineResult } from './pipeline-kafka.js';
import type { TableSummary } from './pipeline-warehouse.js';
import { running, startChild, stopChild, waitForHttp, freePort, type Child } from './processes.js';
import { intSetting } from './setup.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const BENCH_DATABASE = /^ats_bench_[a-z0-9]+$/;
const HOST = '127.0.0.1';
/** The relay's advisory lock (processors/relay.ts): held by the benchmark, it keeps a started relay idle. */
const RELAY_LOCK = 727274002;
/** Issue 3's floor, end to end. */
const TARGET_EVENTS_PER_S = 20_000;
/** Issue 14: relay and loader together at least this share of the bare produce rate, the loader alone of the bare consume rate. */
const TARGET_END_TO_END_X_PRODUCE = 0.5;
const TARGET_LOADER_X_CONSUME = 0.5;
/** Issue 14: freshness p99 at BENCH_RATE clicks/s (1,000 by default). */
const TARGET_FRESHNESS_P99_MS = 1_000;
const WATCHDOG_MS = 30 * 60_000;
/** Longest wait for one run to drain (relay done, loader caught up). */
const DRAIN_TIMEOUT_MS = 10 * 60_000;

function listSetting<T extends string>(name: string, fallback: T[], allowed: readonly T[]): T[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) if (!allowed.includes(item as T)) throw new Error(`${name}: ${item} is not one of ${allowed.join(', ')}`);
  return items as T[];
}

type Client = KafkaConfig['client'];
const settings = {
  adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
  brokers: (process.env.KAFKA_BROKERS || '127.0.0.1:9092').split(',').map((b) => b.trim()).filter(Boolean),
  events: intSetting('BENCH_EVENTS', 200_000, 1_000, 5_000_000),
  rate: intSetting('BENCH_RATE', 1_000, 1, 20_000),
  seconds: intSetting('BENCH_SECONDS', 20, 1, 600),
  clients: listSetting<Client>('BENCH_CLIENTS', ['kafkajs', 'platformatic'], ['kafkajs', 'platformatic']),
  phases: listSetting('BENCH_PHASES', ['throughput', 'breakdown', 'freshness'], ['throughput', 'breakdown', 'freshness'] as const),
  cpuProfDir: process.env.BENCH_CPU_PROF || undefined,
};
/** The service's knobs, passed to the children only when set here. */
const PASSED_THROUGH = ['RELAY_BATCH_SIZE', 'RELAY_POLL_MS', 'LOADER_FLUSH_MS', 'LOADER_MIN_BATCH_BYTES'] as const;
/** What the children will run with: the service's own config parser reads the same variables. */
const serviceConfig = loadConfig(
  Object.fromEntries(PASSED_THROUGH.filter((k) => process.env[k]).map((k) => [k, process.env[k]])),
  { service: 'ingest' },
);

const log = (line = '') => process.stdout.write(`${line}\n`);
const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '-';
const loadText = () => loadavg().map((l) => l.toFixed(2)).join(' ');
// kafkajs warns that an idempotent producer with limited retries may break exactly-once; the service logs that too.
const logger = createLogger('error');

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what} took more than ${ms} ms`)))]);
}

// ---------------------------------------------------------------------------------------------
// Cleanup state: everything the run creates is registered here as soon as it exists.

const runId = randomBytes(5).toString('hex');
const RUN = `ats_bench_${runId}_`;
const state: {
  children: Child[];
  db: Database | undefined;
  dbName: string | undefined;
  gate: pg.Client | undefined;
  admin: BrokerAdmin | undefined;
  groups: string[];
  tmpDir: string | undefined;
  cleaning: Promise<void> | undefined;
} = { children: [], db: undefined, dbName: undefined, gate: undefined, admin: undefined, groups: [], tmpDir: undefined, cleaning: undefined };

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: settings.adminUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    await withTimeout(admin.query(text), 30_000, text);
  } finally {
    await admin.end();
  }
}

function cleanup(): Promise<void> {
  state.cleaning ??= (async () => {
    await Promise.all(state.children.map((child) => stopChild(child).catch(() => undefined)));
    await state.gate?.end().catch(() => undefined);
    if (state.admin) {
      try {
        const topics = await withTimeout(state.admin.dropRun(RUN, state.groups), 60_000, 'deleting topics');
        log(`deleted ${topics.length} topics and ${state.groups.length} consumer groups ${RUN}*`);
      } catch (error) {
        log(`could not delete topics ${RUN}*: ${String(error)}`);
      }
      await state.admin.close().catch(() => undefined);
    }
    if (state.db) await withTimeout(state.db.close(), 10_000, 'closing the bench pool').catch(() => undefined);
    if (state.dbName && BENCH_DATABASE.test(state.dbName)) {
      try {
        await adminQuery(`DROP DATABASE IF EXISTS ${state.dbName} WITH (FORCE)`);
        log(`dropped database ${state.dbName}`);
      } catch (error) {
        log(`could not drop database ${state.dbName}: ${String(error)}`);
      }
    }
    if (state.tmpDir) await rm(state.tmpDir, { recursive: true, force: true }).catch(() => undefined);
  })();
  return state.cleaning;
}

function onSignal(signal: NodeJS.Signals) {
  log(`\n${signal}: cleaning up`);
  void withTimeout(cleanup(), 90_000, 'cleanup')
    .catch(() => undefined)
    .finally(() => process.exit(130));
}

// ---------------------------------------------------------------------------------------------
// CPU time of processes (the figure that stays meaningful on a busy machine).

/** user + system CPU of a process so far, in ms (/proc/<pid>/stat, 10 ms ticks); undefined when gone. */
function processCpuMs(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** Busy and total jiffies of the whole machine (everyone's work, not only ours). */
function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  return { busy: total - idle, total };
}

function brokerPid(): number | undefined {
  try {
    return Number(readFileSync(join(ROOT, '.kafka', 'broker.pid'), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

const q = {
  backends: sql('bench.pipeline_backends', `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`),
  unrelayed: sql('bench.pipeline_unrelayed', `SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL`),
  relayed: sql(
    'bench.pipeline_relayed',
    `SELECT count(*)::int AS n, count(DISTINCT relayed_at)::int AS batches,
            (extract(epoch FROM min(relayed_at)) * 1000)::float8 AS first_ms,
            (extract(epoch FROM max(relayed_at)) * 1000)::float8 AS last_ms,
            count(*) FILTER (WHERE relayed_at = (SELECT max(relayed_at) FROM outbox))::int AS last_batch
       FROM outbox WHERE relayed_at IS NOT NULL`,
  ),
  reset: sql('bench.pipeline_reset', `UPDATE outbox SET relayed_at = NULL WHERE relayed_at IS NOT NULL`),
  vacuum: sql('bench.pipeline_vacuum', `VACUUM ANALYZE outbox`),
  maxId: sql('bench.pipeline_max_id', `SELECT coalesce(max(id), 0)::int AS n FROM outbox`),
  byType: sql('bench.pipeline_by_type', `SELECT event_type, count(*)::int AS n FROM outbox GROUP BY 1 ORDER BY 1`),
  /*
   * Clones of the real events, interleaved like traffic: copy 1 of every event, then copy 2...
   * Each clone gets a fresh event_id (the column default); a click clone also a fresh click_id,
   * used as its key, so the warehouse holds distinct clicks. The subquery is ordered and limited,
   * so it is evaluated once and gen_random_uuid() runs once per clone.
   */
  multiply: sql(
    'bench.pipeline_multiply',
    `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     SELECT event_type,
            CASE WHEN event_type = 'click.recorded' THEN new_click ELSE aggregate_key END,
            program_id, test, occurred_at,
            CASE WHEN event_type = 'click.recorded' THEN payload || jsonb_build_object('click_id', new_click) ELSE payload END
       FROM (SELECT o.event_type, o.aggregate_key, o.program_id, o.test, o.occurred_at, o.payload, gen_random_uuid()::text AS new_click
               FROM outbox o CROSS JOIN generate_series(1, $1::int) AS g (copy)
              WHERE o.id <= $2
              ORDER BY g.copy, o.id
              LIMIT $3) AS clone`,
  ),
  page: sql(
    'bench.pipeline_page',
    `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
       FROM outbox WHERE id > $1 ORDER BY id LIMIT $2`,
  ),
};

/** CPU of the Postgres backends serving this database (the relay's connections and ours). */
async function postgresCpuMs(db: Database): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  for (const { pid } of await db.many<{ pid: number }>(q.backends)) {
    const ms = processCpuMs(pid);
    if (ms !== undefined) cpu.set(pid, ms);
  }
  return cpu;
}

/** CPU snapshot of the processes a run involves; `since` gives the deltas. */
async function cpuSnapshot(db: Database, children: Record<string, Child | undefined>) {
  const ms: Record<string, number | undefined> = {};
  for (const [name, child] of Object.entries(children)) ms[name] = processCpuMs(child?.proc.pid);
  ms.broker = processCpuMs(brokerPid());
  return { at: performance.now(), ms, postgres: await postgresCpuMs(db), machine: machineTicks() };
}
type CpuSnapshot = Awaited<ReturnType<typeof cpuSnapshot>>;

interface CpuUse {
  /** CPU ms per process name, over the interval. */
  ms: Record<string, number>;
  /** Share of the whole machine that was busy (everyone), 0..1. */
  machineBusy: number;
  seconds: number;
}

function cpuUse(before: CpuSnapshot, after: CpuSnapshot): CpuUse {
  const ms: Record<string, number> = {};
  for (const name of Object.keys(after.ms)) {
    const a = after.ms[name];
    const b = before.ms[name];
    if (a !== undefined && b !== undefined) ms[name] = a - b;
  }
  let pgMs = 0;
  for (const [pid, a] of after.postgres) pgMs += a - (before.postgres.get(pid) ?? 0);
  ms.postgres = pgMs;
  const total = after.machine.total - before.machine.total;
  return { ms, machineBusy: total > 0 ? (after.machine.busy - before.machine.busy) / total : 0, seconds: (after.at - before.at) / 1000 };
}

/**
 * The most events a second the machine's cores could carry at a run's CPU per event (the processes
 * named), with every core busy all the time, beside what a ratio target asks: no tuning of waits
 * or batch sizes reaches a rate above this line, only less CPU per event does.
 */
function ceilingLine(cpu: CpuUse, names: string[], events: number, baseRate: number, targetX: number): string {
  const cores = availableParallelism();
  // A process whose CPU could not be read is left out and named: the ceiling is then too high.
  const measured = names.filter((name) => cpu.ms[name] !== undefined);
  const missing = names.filter((name) => cpu.ms[name] === undefined);
  const perThousandMs = measured.reduce((sum, name) => sum + perThousand(cpu.ms[name], events), 0);
  const ceiling = (cores * 1e6) / perThousandMs;
  return `ceiling: ${cores} cores always busy at this run's ${fmt(perThousandMs, 1)} ms per 1,000 events (${measured.join(' + ')}` +
    `${missing.length ? `; not read: ${missing.join(', ')}` : ''}) carry at most ` +
    `${fmt(ceiling)}/s = ${ratio(ceiling, baseRate)}; ${targetX.toFixed(2)}x (${fmt(targetX * baseRate)}/s) needs at most ` +
    `${fmt((cores * 1e6) / (targetX * baseRate), 1)} ms per 1,000 in all`;
}

// ---------------------------------------------------------------------------------------------
// Children.

const baseEnv = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' });
const passedThrough = () => Object.fromEntries(PASSED_THROUGH.filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));

function nodeArgs(script: string, ...args: string[]): string[] {
  const prof = settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] : [];
  return [...prof, '--import', 'tsx', script, ...args];
}

interface Service {
  name: string;
  child: Child;
}

async function startService(role: 'relay' | 'loader', name: string, env: Record<string, string>): Promise<Service> {
  const child = startChild(name, nodeArgs('main.ts', role), {
    cwd: ROOT,
    env: { ...baseEnv(), KAFKA_BROKERS: settings.brokers.join(','), LOG_LEVEL: 'warn', ...passedThrough(), ...env },
    readyPattern: new RegExp(`Affiliate tracking ${role} running`),
  });
  state.children.push(child);
  try {
    await withTimeout(child.readyLine, 60_000, `starting ${name}`);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${child.tail.join('\n')}`);
  }
  return { name, child };
}

async function stopService(service: Service | undefined): Promise<void> {
  if (!service) return;
  const result = await stopChild(service.child, 30_000);
  state.children = state.children.filter((c) => c !== service.child);
  if (result.killed || (result.code !== 0 && result.code !== null)) {
    log(`  ${service.name} stopped badly (code ${result.code}, signal ${result.signal}, killed ${result.killed}):\n${service.child.tail.join('\n')}`);
  }
}

function assertRunning(...services: (Service | undefined)[]) {
  for (const s of services) {
    if (s && !running(s.child)) throw new Error(`${s.name} exited:\n${s.child.tail.join('\n')}`);
  }
}

/** A run's warehouse, read by a child process (chDB binds one directory per process). */
async function readWarehouse<T>(dir: string, mode: 'summary' | 'clicks'): Promise<T> {
  const out = join(state.tmpDir!, `${mode}-${randomBytes(3).toString('hex')}.json`);
  const child = startChild('warehouse-reader', nodeArgs('bench/pipeline-warehouse.ts', dir, mode, out), { cwd: ROOT, env: baseEnv() });
  state.children.push(child);
  const exit = await withTimeout(new Promise<number | null>((resolve) => child.proc.on('exit', resolve)), 120_000, 'reading the warehouse');
  state.children = state.children.filter((c) => c !== child);
  if (exit !== 0) throw new Error(`warehouse reader failed (${exit}):\n${child.tail.join('\n')}`);
  return JSON.parse(await readFile(out, 'utf8')) as T;
}

// ---------------------------------------------------------------------------------------------
// Gate and drain.

async function holdGate(): Promise<void> {
  if (!state.gate) {
    state.gate = new pg.Client({ connectionString: databaseUrl(state.dbName!) });
    await state.gate.connect();
  }
  await state.gate.query('SELECT pg_advisory_lock($1)', [RELAY_LOCK]);
}

async function releaseGate(): Promise<void> {
  await state.gate!.query('SELECT pg_advisory_unlock($1)', [RELAY_LOCK]);
}

/** Waits until (with a relay) the outbox is relayed and (with a loader) its group has committed everything. */
async function drain(db: Database, options: { relay?: Service; loader?: Service; groupId?: string; topics?: readonly string[] }): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  let lastReport = Date.now();
  for (;;) {
    assertRunning(options.relay, options.loader);
    const unrelayed = options.relay ? (await db.one<{ n: number }>(q.unrelayed))!.n : 0;
    const lag = options.loader ? await state.admin!.groupLag(options.groupId!, options.topics!) : 0;
    if (unrelayed === 0 && lag === 0) return;
    if (Date.now() > deadline) throw new Error(`not drained after ${DRAIN_TIMEOUT_MS} ms: ${unrelayed} unrelayed, loader lag ${lag}`);
    if (Date.now() - lastReport > 10_000) {
      log(`    ... ${fmt(unrelayed)} unrelayed, loader lag ${fmt(lag)}`);
      lastReport = Date.now();
    }
    await sleep(250);
  }
}

async function resetOutbox(db: Database): Promise<void> {
  await db.many(q.reset);
  await db.many(q.vacuum);
}

// ---------------------------------------------------------------------------------------------
// Figures of a run.

interface RelayFigures {
  relayed: number;
  batches: number;
  /** Rows of every batch but the last over the time from the first batch's start to the last one's. */
  perS: number;
  firstMs: number;
  lastMs: number;
}

async function relayFigures(db: Database): Promise<RelayFigures> {
  const r = (await db.one<{ n: number; batches: number; first_ms: number; last_ms: number; last_batch: number }>(q.relayed))!;
  const seconds = (r.last_ms - r.first_ms) / 1000;
  return { relayed: r.n, batches: r.batches, perS: seconds > 0 ? (r.n - r.last_batch) / seconds : Number.NaN, firstMs: r.first_ms, lastMs: r.last_ms };
}

interface LoaderFigures {
  events: number;
  rows: number;
  /**
   * Given the time the loader joined its group: every event over the time from the join to the
   * last insert (the baseline consumer is measured the same way). Otherwise the events inserted
   * after the first insert over the time from the first insert to the last.
   */
  perS: number;
  firstMs: number;
  lastMs: number;
  byTable: TableSummary[];
}

function loaderFigures(tables: TableSummary[], joinedAtMs?: number): LoaderFigures {
  const used = tables.filter((t) => t.rows > 0);
  const firstMs = Math.min(...used.map((t) => t.firstMs!));
  const lastMs = Math.max(...used.map((t) => t.lastMs!));
  const afterFirst = used.reduce((n, t) => n + t.afterFirst, 0);
  const events = used.reduce((n, t) => n + t.events, 0);
  return {
    events,
    rows: used.reduce((n, t) => n + t.rows, 0),
    perS: joinedAtMs !== undefined ? events / ((lastMs - joinedAtMs) / 1000) : lastMs > firstMs ? afterFirst / ((lastMs - firstMs) / 1000) : Number.NaN,
    firstMs,
    lastMs,
    byTable: tables,
  };
}

/** Every outbox event type is in the warehouse as often as in the outbox (distinct event ids). */
function missingEvents(outbox: Map<string, number>, tables: TableSummary[]): string[] {
  const problems: string[] = [];
  for (const [eventType, n] of outbox) {
    const table = eventType.replace('.', '_');
    const found = tables.find((t) => t.table === table)?.events ?? 0;
    if (found !== n) problems.push(`${eventType}: ${n} in the outbox, ${found} in ${table}`);
  }
  return problems;
}

const perThousand = (ms: number | undefined, events: number) => (ms === undefined || events === 0 ? Number.NaN : (ms / events) * 1000);

function cpuLine(use: CpuUse, events: number, names: string[]): string {
  const parts = names.filter((n) => use.ms[n] !== undefined).map((n) => `${n} ${fmt(perThousand(use.ms[n], events), 1)}`);
  return `CPU ms per 1,000 events: ${parts.join(', ')} (machine ${fmt(use.machineBusy * 100)} % busy over ${fmt(use.seconds, 1)} s, load ${loadText()})`;
}

// ---------------------------------------------------------------------------------------------
// Setup: database, real traffic, multiplied outbox.

function databaseUrl(name: string): string {
  const url = new URL(settings.adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

interface SeededProgram {
  programId: number;
  apiKey: string;
  affCode: string;
}

async function seedProgram(db: Database, workspaceId: number, label: string): Promise<SeededProgram> {
  const program = await createProgram(db, workspaceId, {
    name: `Bench program ${label}`,
    domain: 'shop.bench.example',
    commission_type: label === 'b' ? 'recurring_percent' : 'percent',
    commission_rate: 10,
    attribution_window_days: 60,
    lead_auth: 'server_required',
    paymentTrackingMode: 's2s',
    allowed_origins: [],
  });
  const { apiKey } = await issueProgramKey(db, program.id);
  const partner = await createPartner(db, program.id, { name: `Bench partner ${label}`, email: `partner-${label}@bench.example`, affCode: `bench-${label}-${runId}` });
  return { programId: program.id, apiKey, affCode: partner.affCode };
}

let ipCounter = 0;
/** A distinct client address per request (the service trusts X-Forwarded-For here): per-IP limits stay out of the way. */
function nextIp(): string {
  const n = ++ipCounter;
  return `${10 + Math.floor(n / 16_777_216)}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/**
 * Customer journeys per program, over HTTP through the real routes: a click (every 7th in test
 * mode), a lead, a sale, a recurring second sale for every 4th, a refund or chargeback for every
 * 3rd. That yields every event type. Sales and refunds stay under the 120 per key per minute.
 */
async function sendJourneys(db: Database, programs: SeededProgram[], perProgram: number): Promise<void> {
  const app = await buildApp({
    db,
    rateLimits: memoryRateLimitStore(),
    logger: createLogger('silent'),
    trustProxy: ['127.0.0.1'],
    tracking: { platformFeeBps: 2_000, docsBaseUrl: 'https://docs.bench.example' },
  });
  try {
    const post = async (url: string, payload: object, key?: string) => {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { 'x-forwarded-for': nextIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
        payload,
      });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
      return res.json() as Record<string, unknown>;
    };
    const journey = async (program: SeededProgram, i: number) => {
      const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.bench.example/?aff=${program.affCode}`, additional_data: { test_mode: i % 7 === 6 } });
      const customer = `bench-${runId}-${program.programId}-${i}`;
      await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: customer }, program.apiKey);
      await post('/api/v1/track/sale', { transaction_id: customer, amount_cents: 1_000 + i, customer_key: customer }, program.apiKey);
      if (i % 4 === 0) {
        await post('/api/v1/track/sale', { transaction_id: `${customer}-r`, amount_cents: 500 + i, customer_key: customer, is_recurring: true }, program.apiKey);
      }
      if (i % 3 === 0) await post('/api/v1/track/refund', { transaction_id: customer, reason: i % 2 ? 'refund' : 'chargeback' }, program.apiKey);
    };
    const work = programs.flatMap((program) => Array.from({ length: perProgram }, (_, i) => () => journey(program, i)));
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < work.length) await work[next++]!();
      }),
    );
  } finally {
    await app.close();
  }
}

async function eventsByType(db: Database): Promise<Map<string, number>> {
  return new Map((await db.many<{ event_type: string; n: number }>(q.byType)).map((r) => [r.event_type, r.n]));
}

/** The outbox's rows as the relay would publish them (baseline topics). */
async function encodedOutbox(db: Database, topicPrefix: string): Promise<LogMessage[]> {
  const codec = createAvroCodec();
  const topics = topicsOf(codec, topicPrefix);
  const messages: LogMessage[] = [];
  let after = 0;
  for (;;) {
    const rows = await db.many<OutboxRow>(q.page, [after, 10_000]);
    if (rows.length === 0) return messages;
    for (const row of rows) {
      const m = codec.message(row);
      messages.push({ ...m, topic: topics.name(m.topic) });
    }
    after = Number(rows[rows.length - 1]!.id);
  }
}

// ---------------------------------------------------------------------------------------------
// Throughput runs.

interface ThroughputRun {
  label: string;
  client: Client;
  relay?: RelayFigures;
  loader?: LoaderFigures;
  /** Events over the time from the relay's first batch to the last row inserted. */
  endToEndPerS?: number;
  cpu: CpuUse;
  cpuNames: string[];
  problems: string[];
}

async function relayAlone(db: Database, client: Client, prefix: string): Promise<ThroughputRun> {
  await holdGate();
  const relay = await startService('relay', `relay (${client})`, { DATABASE_URL: databaseUrl(state.dbName!), KAFKA_CLIENT: client, KAFKA_TOPIC_PREFIX: prefix });
  const before = await cpuSnapshot(db, { relay: relay.child });
  await releaseGate();
  await drain(db, { relay });
  const after = await cpuSnapshot(db, { relay: relay.child });
  await stopService(relay);
  const figures = await relayFigures(db);
  return { label: `relay alone, ${client}`, client, relay: figures, cpu: cpuUse(before, after), cpuNames: ['relay', 'postgres', 'broker'], problems: [] };
}

async function loaderAlone(db: Database, prefix: string, outbox: Map<string, number>): Promise<ThroughputRun> {
  const groupId = `${RUN}loader_alone`;
  state.groups.push(groupId);
  const dir = join(state.tmpDir!, 'loader-alone');
  const topics = topicsOf(createAvroCodec(), prefix).events;
  const loader = await startService('loader', 'loader', { KAFKA_TOPIC_PREFIX: prefix, LOADER_GROUP_ID: groupId, DATA_DIR: dir });
  // `main.ts loader` prints its ready line once the consumer has joined its group (kafkajs run()).
  const joinedAtMs = Date.now();
  const before = await cpuSnapshot(db, { loader: loader.child });
  await drain(db, { loader, groupId, topics });
  const after = await cpuSnapshot(db, { loader: loader.child });
  await stopService(loader);
  const tables = await readWarehouse<TableSummary[]>(join(dir, 'ch'), 'summary');
  return {
    label: 'loader alone (kafkajs consumer)',
    client: 'kafkajs',
    loader: loaderFigures(tables, joinedAtMs),
    cpu: cpuUse(before, after),
    cpuNames: ['loader', 'broker'],
    problems: missingEvents(outbox, tables),
  };
}

async function together(db: Database, client: Client, prefix: string, outbox: Map<string, number>): Promise<ThroughputRun> {
  const groupId = `${RUN}loader_${client}`;
  state.groups.push(groupId);
  const dir = join(state.tmpDir!, `together-${client}`);
  const topics = topicsOf(createAvroCodec(), prefix).events;
  await holdGate();
  const loader = await startService('loader', `loader (${client} run)`, { KAFKA_TOPIC_PREFIX: prefix, LOADER_GROUP_ID: groupId, DATA_DIR: dir });
  const relay = await startService('relay', `relay (${client})`, { DATABASE_URL: databaseUrl(state.dbName!), KAFKA_CLIENT: client, KAFKA_TOPIC_PREFIX: prefix });
  const joinDeadline = Date.now() + 60_000;
  while (!(await state.admin!.groupStable(groupId))) {
    if (Date.now() > joinDeadline) throw new Error(`loader group ${groupId} not stable after 60 s`);
    await sleep(200);
  }
  const before = await cpuSnapshot(db, { relay: relay.child, loader: loader.child });
  await releaseGate();
  await drain(db, { relay, loader, groupId, topics });
  const after = await cpuSnapshot(db, { relay: relay.child, loader: loader.child });
  await stopService(relay);
  await stopService(loader);
  const relayed = await relayFigures(db);
  const tables = await readWarehouse<TableSummary[]>(join(dir, 'ch'), 'summary');
  const loaded = loaderFigures(tables);
  return {
    label: `relay + loader, ${client}`,
    client,
    relay: relayed,
    loader: loaded,
    endToEndPerS: loaded.events / ((loaded.lastMs - relayed.firstMs) / 1000),
    cpu: cpuUse(before, after),
    cpuNames: ['relay', 'loader', 'postgres', 'broker'],
    problems: missingEvents(outbox, tables),
  };
}

// ---------------------------------------------------------------------------------------------
// Freshness runs.

interface FreshnessRun {
  client: Client;
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
async function pacedClicks(port: number, affCode: string, rate: number, seconds: number) {
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
        { agent, host: HOST, port, method: 'POST', path: '/api/v1/track/click', headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() }, timeout: 10_000 },
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

async function freshness(db: Database, client: Client, ingestPort: number, ingest: Child, affCode: string): Promise<FreshnessRun> {
  const prefix = `${RUN}fresh_${client}.`;
  const groupId = `${RUN}fresh_${client}`;
  state.groups.push(groupId);
  const dir = join(state.tmpDir!, `fresh-${client}`);
  const topics = topicsOf(createAvroCodec(), prefix).events;
  const loader = await startService('loader', `loader (freshness, ${client})`, { KAFKA_TOPIC_PREFIX: prefix, LOADER_GROUP_ID: groupId, DATA_DIR: dir });
  const relay = await startService('relay', `relay (freshness, ${client})`, { DATABASE_URL: databaseUrl(state.dbName!), KAFKA_CLIENT: client, KAFKA_TOPIC_PREFIX: prefix });
  const joinDeadline = Date.now() + 60_000;
  while (!(await state.admin!.groupStable(groupId))) {
    if (Date.now() > joinDeadline) throw new Error(`loader group ${groupId} not stable after 60 s`);
    await sleep(200);
  }
  const before = await cpuSnapshot(db, { ingest, relay: relay.child, loader: loader.child });
  const clicks = await pacedClicks(ingestPort, affCode, settings.rate, settings.seconds);
  const after = await cpuSnapshot(db, { ingest, relay: relay.child, loader: loader.child });
  await drain(db, { relay, loader, groupId, topics });
  await stopService(relay);
  await stopService(loader);
  const loaded = new Map(await readWarehouse<Array<[string, number]>>(join(dir, 'ch'), 'clicks'));
  const delays: number[] = [];
  for (const [id, ackedAt] of clicks.acked) {
    const at = loaded.get(id);
    if (at !== undefined) delays.push(at - ackedAt);
  }
  delays.sort((a, b) => a - b);
  return {
    client,
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

// ---------------------------------------------------------------------------------------------

const ratio = (value: number | undefined, base: number) => (value === undefined || !Number.isFinite(value) || !(base > 0) ? '-' : `${(value / base).toFixed(2)}x`);

async function main(): Promise<number> {
  const started = Date.now();
  log(`pipeline benchmark: node ${process.version}, ${availableParallelism()} CPUs, load average ${loadText()}`);
  log(`brokers ${settings.brokers.join(',')}, clients ${settings.clients.join(', ')}, ${fmt(settings.events)} events; ` +
    `relay batch ${serviceConfig.relay.batchSize}, poll ${serviceConfig.relay.pollIntervalMs} ms; ` +
    `loader flush ${serviceConfig.loader.flushIntervalMs} ms, min batch ${fmt(serviceConfig.loader.minBatchBytes)} bytes; ` +
    `${serviceConfig.kafka?.topics.partitions ?? 3} partitions per topic`);
  state.tmpDir = await mkdtemp(join(tmpdir(), 'ats-bench-pipeline-'));
  state.admin = await withTimeout(BrokerAdmin.connect(settings.brokers), 30_000, `connecting to Kafka at ${settings.brokers.join(',')} (scripts/kafka-broker.sh start)`);

  const dbName = `ats_bench_${runId}`;
  await adminQuery(`CREATE DATABASE ${dbName}`);
  state.dbName = dbName;
  const db = await openDatabase({ kind: 'postgres', url: databaseUrl(dbName), poolSize: 4 });
  state.db = db;
  await migrate(db);
  const workspaceId = await createWorkspace(db, 'Bench workspace');
  await addMember(db, workspaceId, 'owner@bench.example', 'owner', 'Bench owner');
  const programs = [await seedProgram(db, workspaceId, 'a'), await seedProgram(db, workspaceId, 'b'), await seedProgram(db, workspaceId, 'c')];
  log(`database ${dbName} created, migrated and seeded (${programs.length} programs)`);

  let failed = false;
  const throughput: ThroughputRun[] = [];
  let baseline: BaselineResult | undefined;
  let outbox = new Map<string, number>();

  if (settings.phases.includes('throughput') || settings.phases.includes('breakdown')) {
    const t0 = performance.now();
    await sendJourneys(db, programs, 40);
    const real = (await db.one<{ n: number }>(q.maxId))!.n;
    const copies = Math.ceil(settings.events / real);
    await db.many(q.multiply, [copies, real, Math.max(0, settings.events - real)]);
    await db.many(q.vacuum);
    outbox = await eventsByType(db);
    const total = [...outbox.values()].reduce((a, b) => a + b, 0);
    log(`outbox: ${fmt(real)} events from HTTP traffic, multiplied to ${fmt(total)} in ${fmt((performance.now() - t0) / 1000, 1)} s: ` +
      [...outbox].map(([t, n]) => `${t} ${fmt((n / total) * 100, 1)} %`).join(', '));
  }

  if (settings.phases.includes('throughput')) {
    log('\nbaseline: the same Avro messages through the broker with kafkajs alone');
    const messages = await encodedOutbox(db, `${RUN}base.`);
    for (let round = 1; round <= CONSUME_ROUNDS; round++) state.groups.push(`${RUN}base-${round}`);
    baseline = await runBaseline({
      config: kafkaConfig(settings.brokers, 'kafkajs', `${RUN}base.`),
      topics: topicsOf(createAvroCodec(), `${RUN}base.`).events,
      messages,
      batchSize: serviceConfig.relay.batchSize,
      groupId: `${RUN}base`,
      minBatchBytes: serviceConfig.loader.minBatchBytes,
      flushIntervalMs: serviceConfig.loader.flushIntervalMs,
      logger,
      timeoutMs: DRAIN_TIMEOUT_MS,
    });
    const avgBytes = messages.reduce((n, m) => n + m.value.length, 0) / messages.length;
    log(`  produce ${fmt(baseline.producePerS)} events/s, consume ${fmt(baseline.consumePerS)} events/s, the median of ${baseline.consumeRoundsPerS.map((r) => fmt(r)).join(', ')} (${fmt(avgBytes)} bytes per message on average)`);
    log(`  CPU ms per 1,000 events: produce ${fmt(baseline.produceCpuPerThousand, 1)}, consume ${fmt(baseline.consumeCpuPerThousand, 1)} (load ${loadText()})`);
    messages.length = 0;

    for (const client of settings.clients) {
      log(`\nrelay alone, ${client}`);
      const run = await relayAlone(db, client, `${RUN}relay_${client}.`);
      throughput.push(run);
      log(`  ${fmt(run.relay!.perS)} events/s (${fmt(run.relay!.relayed)} in ${fmt(run.relay!.batches)} batches), ${ratio(run.relay!.perS, baseline.producePerS)} the baseline's produce`);
      log(`  ${cpuLine(run.cpu, run.relay!.relayed, run.cpuNames)}`);
      await resetOutbox(db);
    }

    if (settings.clients.length) {
      const source = settings.clients[0]!;
      log(`\nloader alone, from the full topics of the ${source} relay`);
      const run = await loaderAlone(db, `${RUN}relay_${source}.`, outbox);
      throughput.push(run);
      log(`  ${fmt(run.loader!.perS)} events/s (${fmt(run.loader!.events)} events, ${fmt(run.loader!.rows)} rows), ${ratio(run.loader!.perS, baseline.consumePerS)} the baseline's consume`);
      log(`  ${cpuLine(run.cpu, run.loader!.events, run.cpuNames)}`);
      for (const p of run.problems) log(`  MISSING ${p}`);
    }

    for (const [i, client] of settings.clients.entries()) {
      log(`\nrelay + loader together, ${client}`);
      const run = await together(db, client, `${RUN}e2e_${client}.`, outbox);
      throughput.push(run);
      log(`  end to end ${fmt(run.endToEndPerS!)} events/s; relay ${fmt(run.relay!.perS)}, loader (following the relay) ${fmt(run.loader!.perS)} events/s`);
      log(`  ${cpuLine(run.cpu, run.loader!.events, run.cpuNames)}`);
      for (const p of run.problems) log(`  MISSING ${p}`);
      if (i < settings.clients.length - 1) await resetOutbox(db);
    }
    failed ||= throughput.some((r) => r.problems.length > 0);
  }

  if (settings.phases.includes('breakdown') && outbox.size) {
    // In this process, so each step can be timed: relay the outbox again, then load what it published.
    await resetOutbox(db);
    const codec = createAvroCodec();
    log(`\nbreakdown: relay (kafkajs) and loader in the benchmark's process, each step timed (ms per 1,000 events)`);
    const relay = await relayBreakdown({ db, kafka: kafkaConfig(settings.brokers, 'kafkajs', `${RUN}breakdown.`), codec, batchSize: serviceConfig.relay.batchSize, logger });
    const r = relay.figures;
    log(`  relay:  total ${fmt(r.total, 1)} = Postgres (lock, read, mark, commit) ${fmt(r.postgres, 1)} + encode ${fmt(r.encode, 1)} + publish until acked ${fmt(r.publish, 1)}` +
      `  (${fmt(r.relayed)} events, ${r.batches} batches, ${fmt(1_000_000 / r.total)} events/s)`);
    const l = await loaderBreakdown({ messages: relay.messages, codec, chdbPath: join(state.tmpDir!, 'breakdown-ch'), batchSize: 5_000 });
    log(`  loader: total ${fmt(l.total, 1)} = decode ${fmt(l.decode, 1)} + map, encode and hash (beside the inserts) ${fmt(l.mapAndHash, 1)} + chDB inserts (any in flight) ${fmt(l.insert, 1)} + rollup recompute ${fmt(l.rollup, 1)}` +
      `  (${fmt(l.loaded)} events, ${l.batches} batches of up to 5,000, ${fmt(1_000_000 / l.total)} events/s)`);
  }

  const fresh: FreshnessRun[] = [];
  if (settings.phases.includes('freshness')) {
    // Whatever the throughput runs left unrelayed would be relayed into these topics too.
    await db.many(sql('bench.pipeline_mark_all', `UPDATE outbox SET relayed_at = now() WHERE relayed_at IS NULL`));
    const port = await freePort();
    const ingest = startChild('ingest', nodeArgs('main.ts', 'ingest'), {
      cwd: ROOT,
      env: {
        ...baseEnv(), DATABASE_URL: databaseUrl(dbName), PORT: String(port), HOST, LOG_LEVEL: 'warn', TRUST_PROXY: '127.0.0.1', SEED_DEMO: 'false',
        DATA_DIR: join(state.tmpDir, 'ingest'), SECRETS_KEY: randomBytes(32).toString('base64'),
      },
    });
    state.children.push(ingest);
    await waitForHttp(`http://${HOST}:${port}/healthz`, ingest, 60_000);
    for (const client of settings.clients) {
      log(`\nfreshness, ${client}: clicks at ${fmt(settings.rate)}/s for ${settings.seconds} s`);
      const run = await freshness(db, client, port, ingest, programs[0]!.affCode);
      fresh.push(run);
      const f = run.freshnessMs;
      log(`  sent ${fmt(run.sent)} (${fmt(run.sentPerS)}/s), acknowledged ${fmt(run.acked)}, failed ${fmt(run.failed)}, HTTP p99 ${fmt(run.httpP99Ms, 1)} ms`);
      log(`  found ${fmt(run.found)} of ${fmt(run.acked)} acknowledged clicks in the warehouse`);
      log(`  200 -> row inserted: p50 ${fmt(f.p50)} ms, p95 ${fmt(f.p95)} ms, p99 ${fmt(f.p99)} ms, max ${fmt(f.max)} ms (min ${fmt(f.min)} ms)`);
      log(`  ${cpuLine(run.cpu, run.acked, ['ingest', 'relay', 'loader', 'postgres', 'broker'])}`);
      failed ||= run.found !== run.acked;
    }
  }

  // Report.
  log('\nsummary');
  if (baseline) {
    log(`  baseline (kafkajs alone, same messages): produce ${fmt(baseline.producePerS)}/s, consume ${fmt(baseline.consumePerS)}/s`);
    log(`  ${'run'.padEnd(34)}${'relay/s'.padStart(10)}${'x prod'.padStart(8)}${'loader/s'.padStart(10)}${'x cons'.padStart(8)}${'e2e/s'.padStart(10)}${'x prod'.padStart(8)}`);
    for (const r of throughput) {
      log(`  ${r.label.padEnd(34)}${(r.relay ? fmt(r.relay.perS) : '').padStart(10)}${(r.relay ? ratio(r.relay.perS, baseline.producePerS) : '').padStart(8)}` +
        `${(r.loader ? fmt(r.loader.perS) : '').padStart(10)}${(r.loader ? ratio(r.loader.perS, baseline.consumePerS) : '').padStart(8)}` +
        `${(r.endToEndPerS ? fmt(r.endToEndPerS) : '').padStart(10)}${(r.endToEndPerS ? ratio(r.endToEndPerS, baseline.producePerS) : '').padStart(8)}`);
    }
    log(`  (x prod / x cons: against the baseline's produce / consume rate; end to end against its produce rate, as issue 14 sets it)`);
    log(`  targets, each beside this run's baseline:`);
    const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
    for (const r of throughput.filter((t) => t.endToEndPerS)) {
      const x = r.endToEndPerS! / baseline.producePerS;
      log(`  ${r.label}: ${fmt(r.endToEndPerS!)} events/s end to end = ${x.toFixed(2)}x the bare produce (${fmt(baseline.producePerS)}/s); ` +
        `target >= ${TARGET_END_TO_END_X_PRODUCE.toFixed(2)}x: ${verdict(x >= TARGET_END_TO_END_X_PRODUCE)}; ` +
        `target >= ${fmt(TARGET_EVENTS_PER_S)} events/s: ${verdict(r.endToEndPerS! >= TARGET_EVENTS_PER_S)}`);
      log(`    CPU ms per 1,000 events: relay ${fmt(perThousand(r.cpu.ms.relay, r.loader!.events), 1)} (bare produce ${fmt(baseline.produceCpuPerThousand, 1)}, ` +
        `${ratio(perThousand(r.cpu.ms.relay, r.loader!.events), baseline.produceCpuPerThousand)}), loader ${fmt(perThousand(r.cpu.ms.loader, r.loader!.events), 1)} ` +
        `(bare consume ${fmt(baseline.consumeCpuPerThousand, 1)}, ${ratio(perThousand(r.cpu.ms.loader, r.loader!.events), baseline.consumeCpuPerThousand)})`);
      log(`    ${ceilingLine(r.cpu, ['relay', 'loader', 'postgres', 'broker'], r.loader!.events, baseline.producePerS, TARGET_END_TO_END_X_PRODUCE)}`);
    }
    for (const r of throughput.filter((t) => t.loader && !t.relay)) {
      const x = r.loader!.perS / baseline.consumePerS;
      const cpu = perThousand(r.cpu.ms.loader, r.loader!.events);
      log(`  ${r.label}: ${fmt(r.loader!.perS)} events/s = ${x.toFixed(2)}x the bare consume (${fmt(baseline.consumePerS)}/s); ` +
        `target >= ${TARGET_LOADER_X_CONSUME.toFixed(2)}x: ${verdict(x >= TARGET_LOADER_X_CONSUME)}; ` +
        `CPU ${fmt(cpu, 1)} ms per 1,000 events (bare consume ${fmt(baseline.consumeCpuPerThousand, 1)}, ${ratio(cpu, baseline.consumeCpuPerThousand)})`);
      log(`    ${ceilingLine(r.cpu, ['loader', 'broker'], r.loader!.events, baseline.consumePerS, TARGET_LOADER_X_CONSUME)}`);
    }
  }
  for (const r of fresh) {
    const met = r.freshnessMs.p99 < TARGET_FRESHNESS_P99_MS && r.found === r.acked;
    log(`  freshness (${r.client}) at ${fmt(r.sentPerS)} clicks/s: p99 ${fmt(r.freshnessMs.p99)} ms (p50 ${fmt(r.freshnessMs.p50)}), ${fmt(r.found)}/${fmt(r.acked)} found; ` +
      `target p99 < ${fmt(TARGET_FRESHNESS_P99_MS)} ms at ${fmt(settings.rate)}/s with every click found: ${met ? 'met' : 'MISSED'}`);
  }
  log(`  ${failed ? 'FAILED: events missing from the warehouse' : 'every event and every acknowledged click reached the warehouse'}`);
  log(`  total time ${fmt((Date.now() - started) / 1000)} s, load average ${loadText()}`);
  return failed ? 1 : 0;
}

process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
const watchdog = setTimeout(() => {
  log(`watchdog: still running after ${WATCHDOG_MS / 60_000} min; cleaning up`);
  void cleanup().finally(() => process.exit(2));
}, WATCHDOG_MS);
watchdog.unref();

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    log(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await cleanup();
    process.exit(1);
  });
