/**
 * Ingest benchmark (npm run bench:ingest). Not a test: it reports throughput and latency of clicks,
 * sales, leads and refunds beside their targets and a bare-route baseline, and fails (exit 1) only
 * when an acknowledged write is missing from the database.
 *
 * Each phase's measured run is closed-loop: as many requests a second as the service answers, so
 * its latency is that of a saturated service (about connections / rate, plus its tail). Sales, leads
 * and refunds then run once more at the target rate on a fixed schedule (open loop), and their p99
 * target is read there, from each request's scheduled time: the latency a client sees at that load.
 *
 * Against a real PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 * it creates a throw-away database ats_bench_<hex>, migrates and seeds it with the domain
 * functions, starts the real service (main.ts, ingest role) and a bare Fastify baseline as child
 * processes on loopback, drives both with wrk (bench/wrk.ts), checks durability, and drops the
 * database. wrk must be on PATH (Debian: apt-get install wrk): a load generator in JavaScript
 * takes too much of a small machine's CPU from the service and PostgreSQL it measures.
 *
 * Knobs (all optional): BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 50), BENCH_THREADS (wrk threads, default 1; must divide the
 * connections), BENCH_CLICK_POOL (clicks created for the sale phase, default 3000),
 * BENCH_WRITE_POOL (clicks made for the lead phase and paid sales for the refund phase, each used once;
 * default four times what the sale rate would use),
 * BENCH_CPU_PROF (a directory: the service runs with --cpu-prof and writes its profile there),
 * BENCH_PHASES (`all`, the default, or `click`: the baseline and the click phase only, for work on
 * the click path; the other phases need the clicks' figures, so they cannot run without it),
 * BENCH_ROUNDS (with BENCH_PHASES=click: baseline and click alternate this many times, default 1,
 * and the median round's ratio is the figure, so that a change in the machine's load falls on both).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import fastifyPackage from 'fastify/package.json' with { type: 'json' };
import { openDatabase, sql, type Database } from '../core/db.js';
import { migrate } from '../core/migrate.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { freePort, running, startChild, stopChild, waitForHttp, type Child } from './processes.js';
import { createBenchDatabase, databaseUrl, DEFAULT_ADMIN_URL, dropBenchDatabase, exitedChildrenCpuMicros, intSetting, processCpuMicros, seedProgram, withTimeout } from './setup.js';
import { findWrk, killWrkRuns, luaString, runWrk, wrkVersion, type PacedLatency, type RequestSpec, type WrkResult, type WrkThread } from './wrk.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';

/** The service's limits the load must stay under (ingest/tracking/routes.ts). */
const SALE_LIMIT_PER_KEY_PER_MIN = 120;
/**
 * Sales planned per key: sales and then refunds share the key's limit, and both phases may fall into
 * one minute window, so each gets under half of it.
 */
const SALES_PER_KEY = 55;
/** Programs (each with its key) the sales and refunds rotate over; seeding them takes about 7 s a thousand. */
const MAX_PROGRAMS = 2_000;

/** Issue 2's click targets. */
const TARGET_CLICKS_PER_S = 5_000;
const TARGET_P99_MS = 50;
/** Issue 14's: clicks at least half the bare route; sales, leads and refunds each at these figures. */
const TARGET_CLICKS_X_BASELINE = 0.5;
const TARGET_WRITE_PER_S = 3_000;
const TARGET_WRITE_P99_MS = 30;
const TARGET_WRITE_CPU_US = 200;

/** Hard stop for the whole run; every step is bounded on its own, this is belt and braces. */
const WATCHDOG_MS = 5 * 60_000;

const settings = {
  adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
  duration: intSetting('BENCH_DURATION', 10, 1, 60),
  warmup: intSetting('BENCH_WARMUP', 2, 0, 30),
  connections: intSetting('BENCH_CONNECTIONS', 50, 1, 500),
  threads: intSetting('BENCH_THREADS', 1, 1, 8),
  clickPool: intSetting('BENCH_CLICK_POOL', 3_000, 100, 20_000),
  writePool: intSetting('BENCH_WRITE_POOL', 0, 0, 500_000),
  cpuProfDir: process.env.BENCH_CPU_PROF || undefined,
  phases: process.env.BENCH_PHASES || 'all',
  rounds: intSetting('BENCH_ROUNDS', 1, 1, 10),
};
if (settings.phases !== 'all' && settings.phases !== 'click') throw new Error('BENCH_PHASES must be all or click');
if (settings.connections % settings.threads !== 0) {
  // wrk gives each thread connections / threads (rounded down).
  throw new Error(`BENCH_CONNECTIONS (${settings.connections}) must be a multiple of BENCH_THREADS (${settings.threads})`);
}

/** The load generator; checked before anything is created. */
function wrkOrExit(): string {
  const path = findWrk();
  if (path) return path;
  process.stderr.write('wrk not found: apt-get install wrk\n');
  process.exit(2);
}
const WRK = wrkOrExit();

/** Requests taking longer than this are counted as timeouts by wrk (their latency is not recorded). */
const REQUEST_TIMEOUT_S = 10;

// ---------------------------------------------------------------------------------------------
// Cleanup state: everything the run creates is registered here as soon as it exists.

const state: {
  children: Child[];
  db: Database | undefined;
  dbName: string | undefined;
  tmpDir: string | undefined;
  cleaning: Promise<void> | undefined;
} = {
  children: [],
  db: undefined,
  dbName: undefined,
  tmpDir: undefined,
  cleaning: undefined,
};

const log = (line = '') => process.stdout.write(`${line}\n`);

function cleanup(): Promise<void> {
  state.cleaning ??= (async () => {
    killWrkRuns();
    const stops = await Promise.all(
      state.children.map(async (child) => ({ child, result: await stopChild(child).catch(() => undefined) })),
    );
    for (const { child, result } of stops) {
      if (result) log(`stopped ${child.name}: exit code ${result.code ?? '-'}${result.signal ? `, signal ${result.signal}` : ''}${result.killed ? ' (SIGKILL after grace period)' : ''}`);
    }
    if (state.db) await withTimeout(state.db.close(), 10_000, 'closing the bench pool').catch((e: unknown) => log(`closing the bench pool: ${String(e)}`));
    if (state.dbName) {
      try {
        await dropBenchDatabase(settings.adminUrl, state.dbName);
        log(`dropped database ${state.dbName}`);
      } catch (error) {
        log(`could not drop database ${state.dbName}: ${String(error)}`);
      }
    }
    if (state.tmpDir) await rm(state.tmpDir, { recursive: true, force: true }).catch(() => {});
  })();
  return state.cleaning;
}

function onSignal(signal: NodeJS.Signals) {
  log(`\n${signal}: cleaning up`);
  void withTimeout(cleanup(), 30_000, 'cleanup')
    .catch(() => {})
    .finally(() => process.exit(130));
}

// ---------------------------------------------------------------------------------------------
// Load generation helpers.

/**
 * Every request gets its own client address (TRUST_PROXY=127.0.0.1, the loopback load generator as the one trusted proxy, makes the service use it): 10.x.y.z
 * from a counter, the same formula as the wrk script's. Requests made here take the next value;
 * each wrk run starts at the counter and the counter then moves past every address it may have used.
 */
let ipCounter = 0;
function nextIp(): string {
  const n = ++ipCounter;
  return `${10 + Math.floor(n / 16_777_216)}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Other work on the machine skews every figure; the load average says whether there was any. */
const loadText = () => loadavg().map((l) => l.toFixed(2)).join(' ');

interface PhaseSummary {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  tooMany: number;
  /** 2xx answers whose body lacked the expected field. */
  unreadable: number;
  statusCodes: Record<string, number>;
  /** Seconds. */
  duration: number;
  /** Ids read from the 2xx bodies (click_id, transaction_id) when the phase collects them. */
  ids: string[];
  threads: WrkThread[];
  /** An open-loop run's latency from the schedule (ms), and the rate it was paced at. */
  paced?: PacedLatency & { rate: number };
}

function summarize(name: string, run: WrkResult, rate?: number): PhaseSummary {
  const ok = run.threads.reduce((n, t) => n + t.ok, 0);
  const seconds = run.durationUs / 1e6;
  return {
    name,
    rps: seconds > 0 ? run.requests / seconds : 0,
    p50: run.latencyUs.p50 / 1000,
    p99: run.latencyUs.p99 / 1000,
    ok,
    non2xx: run.requests - ok,
    errors: run.errors.connect + run.errors.read + run.errors.write,
    timeouts: run.errors.timeout,
    tooMany: run.statuses['429'] ?? 0,
    unreadable: run.threads.reduce((n, t) => n + t.unreadable, 0),
    statusCodes: run.statuses,
    duration: seconds,
    ids: run.ids,
    threads: run.threads,
    ...(run.paced && rate
      ? {
          paced: {
            rate,
            count: run.paced.count,
            p50: run.paced.p50 / 1000,
            p99: run.paced.p99 / 1000,
            max: run.paced.max / 1000,
            lagP99: run.paced.lagP99 / 1000,
            lagMax: run.paced.lagMax / 1000,
          },
        }
      : {}),
  };
}

let runNumber = 0;

/**
 * One wrk run with the benchmark's settings (wrk stops on its own timer after `duration` seconds);
 * with a rate, open-loop on a fixed schedule.
 */
async function drive(name: string, baseUrl: string, spec: RequestSpec, duration: number, rate?: number): Promise<PhaseSummary> {
  const ipBase = ipCounter;
  const run = await runWrk({
    wrk: WRK,
    baseUrl,
    threads: settings.threads,
    connections: settings.connections,
    duration,
    timeout: REQUEST_TIMEOUT_S,
    ipBase,
    dir: state.tmpDir!,
    name: `${++runNumber}-${name.replace(/[^a-z0-9]+/gi, '-')}`,
    spec,
    ...(rate ? { rate } : {}),
  });
  ipCounter = ipBase + settings.threads * Math.max(0, ...run.threads.map((t) => t.sent));
  const seen = Object.values(run.statuses).reduce((a, b) => a + b, 0);
  if (seen !== run.requests) log(`  ${name}: wrk counted ${run.requests} responses, its response() callback ${seen}`);
  return summarize(name, run, rate);
}

/** One JSON body for every request, as the click and the baseline send. */
function fixedBodySpec(path: string, body: string, answer: string, collectIds: boolean): RequestSpec {
  return { path, prelude: `local BODY = ${luaString(body)}`, build: '  body = BODY\n  extra = ""', answer, collectIds };
}

interface WalStats {
  records: number;
  bytes: number;
  writes: number;
  syncs: number;
  /** The bench database's transactions: each statement outside a transaction is one (round trips). */
  xacts: number;
}

const walStats = sql(
  'bench.wal_stats',
  `SELECT wal_records AS records, wal_bytes AS bytes, wal_write AS writes, wal_sync AS syncs,
          (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()) AS xacts
     FROM pg_stat_wal`,
);

const benchBackends = sql('bench.backends', `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`);

/** CPU time (µs) of the bench database's server processes: the service's pool and the bench's own (idle while it measures). */
async function backendCpu(db: Database | undefined): Promise<Map<number, number> | undefined> {
  if (!db) return undefined;
  const rows = await db.many<{ pid: number }>(benchBackends).catch(() => []);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const micros = processCpuMicros(pid);
    if (micros !== undefined) cpu.set(pid, micros);
  }
  return cpu.size ? cpu : undefined;
}

/** CPU the backends seen before used since; a backend that ended meanwhile is not counted (the pool keeps its connections). */
function backendCpuSince(before: Map<number, number> | undefined): number | undefined {
  if (!before) return undefined;
  let used = 0;
  for (const [pid, micros] of before) used += (processCpuMicros(pid) ?? micros) - micros;
  return used;
}

const checkpointNow = sql('bench.checkpoint', 'CHECKPOINT');

/**
 * Every phase starts right after a checkpoint. A run writes about a gigabyte of WAL, and with the
 * default max_wal_size PostgreSQL starts a checkpoint every half gigabyte or so, wherever in the run
 * that falls: the phase it lands in pays for a burst of full-page images, and run-to-run figures
 * then differ by which phase that was. From a checkpoint of its own, each phase pays that cost at
 * its start (in its warm-up) and no WAL-triggered one falls inside it. Needs a superuser or
 * pg_checkpoint (PostgreSQL 15); without, the phase runs as is and the report says so.
 */
async function checkpoint(db: Database | undefined): Promise<void> {
  if (!db) return;
  await db.many(checkpointNow).catch((error: unknown) => log(`  CHECKPOINT refused (${String(error)}): a WAL-triggered checkpoint may fall inside this phase`));
}

/** Cluster-wide WAL counters (PostgreSQL 14+); undefined where the view is missing. */
async function walSnapshot(db: Database | undefined): Promise<WalStats | undefined> {
  if (!db) return undefined;
  return db.one<WalStats>(walStats).catch(() => undefined);
}

type Stage = 'warmup' | 'measure' | 'paced';

interface PhaseOptions {
  /** For the WAL counters. */
  db?: Database;
  /** The process answering, whose CPU time is read around the measured run. */
  pid?: number;
  afterRun?: (stage: Stage, run: PhaseSummary) => void;
  /**
   * Then one more run at this rate, open-loop, for the latency at that load: the measured run is
   * closed-loop (every connection sends again as soon as it is answered), so its latency is that of
   * a saturated service and grows with the number of connections, whatever the service does.
   */
  pacedRate?: number;
}

/**
 * A warm-up run (reported only as counts) then the measured run. `requests` is asked for each run
 * just before it starts; `afterRun` sees each run's result. `cpuPerOk` is the answering process's
 * CPU time (user + system) per 2xx in µs: unlike req/s it hardly moves when others load the machine.
 */
async function phase(name: string, url: string, requests: (stage: Stage) => RequestSpec, { db, pid, afterRun, pacedRate }: PhaseOptions = {}) {
  let warm: PhaseSummary | undefined;
  await checkpoint(db);
  if (settings.warmup > 0) {
    log(`  ${name}: warm-up ${settings.warmup} s`);
    warm = await drive(`${name} warm-up`, url, requests('warmup'), settings.warmup);
    afterRun?.('warmup', warm);
  }
  log(`  ${name}: measuring ${settings.duration} s, ${settings.connections} connections (machine load average ${loadText()})`);
  const walBefore = await walSnapshot(db);
  const cpuBefore = pid === undefined ? undefined : processCpuMicros(pid);
  const pgBefore = await backendCpu(db);
  const loadBefore = exitedChildrenCpuMicros();
  const measured = await drive(name, url, requests('measure'), settings.duration);
  const loadAfter = exitedChildrenCpuMicros();
  const cpuAfter = pid === undefined ? undefined : processCpuMicros(pid);
  const pgUsed = backendCpuSince(pgBefore);
  const walAfter = await walSnapshot(db);
  afterRun?.('measure', measured);
  const wal =
    walBefore && walAfter
      ? {
          records: walAfter.records - walBefore.records,
          bytes: walAfter.bytes - walBefore.bytes,
          writes: walAfter.writes - walBefore.writes,
          syncs: walAfter.syncs - walBefore.syncs,
          xacts: walAfter.xacts - walBefore.xacts,
        }
      : undefined;
  const cpuPerOk = cpuBefore !== undefined && cpuAfter !== undefined && measured.ok > 0 ? (cpuAfter - cpuBefore) / measured.ok : undefined;
  const pgCpuPerOk = pgUsed !== undefined && measured.ok > 0 ? pgUsed / measured.ok : undefined;
  // wrk is the only child that exits during the run, so the children's CPU that grew is its own.
  const loadCpuPerOk = loadBefore !== undefined && loadAfter !== undefined && measured.ok > 0 ? (loadAfter - loadBefore) / measured.ok : undefined;
  log(`  ${name}: ${measured.rps.toFixed(0)} req/s, p50 ${fmt(measured.p50, 1)} ms, p99 ${fmt(measured.p99, 1)} ms, 2xx ${measured.ok}, non-2xx ${measured.non2xx}` +
    `${cpuPerOk === undefined ? '' : `, ${fmt(cpuPerOk, 1)} µs CPU per 2xx`}${pgCpuPerOk === undefined ? '' : ` (PostgreSQL backends ${fmt(pgCpuPerOk, 1)} µs)`}` +
    `${loadCpuPerOk === undefined ? '' : `; load generator ${fmt(loadCpuPerOk, 1)} µs`}`);
  let paced: PhaseSummary | undefined;
  if (pacedRate) {
    log(`  ${name}: ${settings.duration} s at ${fmt(pacedRate)}/s, open loop (machine load average ${loadText()})`);
    paced = await drive(`${name} at ${fmt(pacedRate)}/s`, url, requests('paced'), settings.duration, pacedRate);
    afterRun?.('paced', paced);
    const p = paced.paced;
    log(`  ${name}: ${paced.ok} 2xx of ${fmt(pacedRate * settings.duration)} scheduled` +
      `${p ? `; from the schedule p50 ${fmt(p.p50, 1)} ms, p99 ${fmt(p.p99, 1)} ms; sends behind the schedule p99 ${fmt(p.lagP99, 1)} ms` : ''}`);
  }
  return { warm, measured, paced, wal, cpuPerOk, pgCpuPerOk, loadCpuPerOk };
}

/** Runs tasks with at most `concurrency` in flight. */
async function inParallel<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

async function postClick(baseUrl: string, affCode: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/v1/track/click`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': nextIp() },
    body: JSON.stringify({ affiliate_url: `https://shop.bench.example/?aff=${affCode}` }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`click for ${affCode} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { click_id: string }).click_id;
}

/** A load spread over many programs' keys, each request taking one item of its key's pool. */
interface KeyedLoad {
  path: string;
  /** One program key per pool. */
  keys: string[];
  /** Per key, the values a request may use (JSON strings or numbers as they go into the body). */
  pools: string[][];
  /** Reuse a key's pool from its start when it runs out (sales' clicks); otherwise the last item is reused and answered non-2xx. */
  wrap: boolean;
  /** A Lua expression for the body; `item` is the pool's value (already JSON), STAGE, tid and n as in the other phases. */
  body: string;
  answer: string;
}

/**
 * Request s (counted across the warm-up and the measured run) goes to key s % keys with that key's
 * item floor(s / keys). `perKey` counts the requests the script built per key (an upper bound of
 * those sent), for the rate-limit report.
 */
async function keyedPhase(name: string, url: string, pid: number | undefined, load: KeyedLoad, perKey: number[], db: Database, pacedRate?: number) {
  const tables = [
    `local AUTH = {\n${load.keys.map((k) => `  ${luaString(`Authorization: Bearer ${k}\r\n`)},`).join('\n')}\n}`,
    `local POOL = {\n${load.pools.map((items) => `  {${items.map((item) => luaString(item)).join(', ')}},`).join('\n')}\n}`,
    'local KEYS = #AUTH',
  ].join('\n');
  let counter = 0;
  const requests = (stage: Stage): RequestSpec => ({
    path: load.path,
    prelude: `local BASE = ${counter}\nlocal STAGE = ${luaString(stage)}\n${tables}`,
    build: [
      '  local s = BASE + i',
      '  local k = s % KEYS + 1',
      '  local pool = POOL[k]',
      '  local j = floor(s / KEYS)',
      `  local item = pool[${load.wrap ? 'j % #pool + 1' : 'math.min(j + 1, #pool)'}]`,
      '  extra = AUTH[k]',
      `  body = ${load.body}`,
    ].join('\n'),
    answer: load.answer,
    collectIds: true,
  });
  const count = (_stage: Stage, run: PhaseSummary) => {
    const base = counter;
    for (const t of run.threads) {
      for (let n = 0; n < t.sent; n++) perKey[(base + n * settings.threads + t.tid) % load.keys.length]!++;
    }
    counter = base + settings.threads * Math.max(0, ...run.threads.map((t) => t.sent));
  };
  const result = await phase(name, url, requests, { db, pid, afterRun: count, ...(pacedRate ? { pacedRate } : {}) });
  const smallestPool = Math.min(...load.pools.map((items) => items.length));
  const exhausted = !load.wrap && Math.ceil(counter / load.keys.length) > smallestPool;
  return { ...result, exhausted };
}

// ---------------------------------------------------------------------------------------------
// Durability checks.

const count = {
  clicks: sql('bench.count_clicks', `SELECT count(*)::int AS n FROM clicks`),
  clickEvents: sql('bench.count_click_events', `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'click.recorded'`),
  clicksAmong: sql('bench.count_clicks_among', `SELECT count(*)::int AS n FROM clicks WHERE click_id = ANY ($1::text[])`),
  clickEventsAmong: sql(
    'bench.count_click_events_among',
    `SELECT count(DISTINCT aggregate_key)::int AS n FROM outbox WHERE event_type = 'click.recorded' AND aggregate_key = ANY ($1::text[])`,
  ),
  sales: sql('bench.count_sales', `SELECT count(*)::int AS n FROM sale_events WHERE transaction_id LIKE 'bench-sale-%'`),
  salesAmong: sql('bench.count_sales_among', `SELECT count(*)::int AS n FROM sale_events WHERE transaction_id = ANY ($1::text[])`),
  saleEvents: sql('bench.count_sale_events', `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'sale.recorded'`),
  commissions: sql('bench.count_commissions', `SELECT count(*)::int AS n FROM commissions`),
  leadsAmong: sql('bench.count_leads_among', `SELECT count(*)::int AS n FROM customers WHERE click_id = ANY ($1::text[]) AND customer_key LIKE 'bench-lead-%'`),
  leadEvents: sql('bench.count_lead_events', `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'customer.changed' AND payload->>'change' = 'lead'`),
  refundsAmong: sql(
    'bench.count_refunds_among',
    `SELECT count(*)::int AS n FROM sale_events s WHERE s.transaction_id = ANY ($1::text[]) AND s.status = 'refunded'
        AND EXISTS (SELECT 1 FROM refunds r WHERE r.sale_id = s.id)`,
  ),
};

const benchSql = {
  /** Lead clicks copied from one real click of the program: the same link, partner and junction. */
  copyClicks: sql(
    'bench.copy_clicks',
    `INSERT INTO clicks (click_id, program_id, partner_id, partner_program_id, referral_link_id, affiliate_url)
     SELECT gen_random_uuid()::text, k.program_id, k.partner_id, k.partner_program_id, k.referral_link_id, k.affiliate_url
       FROM clicks k CROSS JOIN generate_series(1, $2::int)
      WHERE k.click_id = $1
     RETURNING click_id`,
  ),
  /**
   * Paid sales to refund, copied (with their commission and platform fee) from one paid bench sale of
   * the program: the sale phase alone may not make as many sales as the refund phase can refund.
   */
  copySales: sql(
    'bench.copy_sales',
    `WITH source AS (
       SELECT s.program_id, s.customer_id, s.partner_id, s.amount_cents, s.currency, s.occurred_at, s.is_recurring,
              c.partner_id AS commission_partner_id, c.customer_id AS commission_customer_id, c.commission_type,
              c.commission_rate, c.amount_cents AS commission_cents, f.amount_cents AS fee_cents
         FROM sale_events s JOIN commissions c ON c.sale_id = s.id JOIN platform_fees f ON f.commission_id = c.id
        WHERE s.program_id = $1 AND s.transaction_id LIKE 'bench-sale-%' AND s.status = 'paid'
        LIMIT 1
     ), copies AS (
       SELECT source.*, gen_random_uuid() AS sale_id, gen_random_uuid() AS commission_id,
              'bench-refund-' || $1 || '-' || g AS transaction_id
         FROM source CROSS JOIN generate_series(1, $2::int) g
     ), sales AS (
       INSERT INTO sale_events (id, program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at, is_recurring)
       SELECT sale_id, program_id, customer_id, partner_id, transaction_id, amount_cents, currency, occurred_at, is_recurring FROM copies
     ), commissions AS (
       INSERT INTO commissions (id, sale_id, program_id, partner_id, customer_id, commission_type, commission_rate, amount_cents, currency)
       SELECT commission_id, sale_id, program_id, commission_partner_id, commission_customer_id, commission_type, commission_rate,
              commission_cents, currency FROM copies
     ), fees AS (
       INSERT INTO platform_fees (sale_id, commission_id, program_id, amount_cents, currency)
       SELECT sale_id, commission_id, program_id, fee_cents, currency FROM copies
     )
     SELECT transaction_id FROM copies`,
  ),
};

async function countOf(db: Database, query: ReturnType<typeof sql>, params: unknown[] = []): Promise<number> {
  return (await db.one<{ n: number }>(query, params))!.n;
}

/** Requests still in the service when wrk stopped may commit a moment later: wait until the count settles (bounded). */
async function settledCount(db: Database, query: ReturnType<typeof sql>): Promise<number> {
  let last = await countOf(db, query);
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    await sleep(300);
    const now = await countOf(db, query);
    if (now === last) return now;
    last = now;
  }
  return last;
}

// ---------------------------------------------------------------------------------------------
// Output.

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function table(rows: PhaseSummary[]) {
  const header = ['phase', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'timeouts', '429'];
  const lines = rows.map((r) => [r.name, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.ok), fmt(r.non2xx), fmt(r.errors), fmt(r.timeouts), fmt(r.tooMany)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  log(`  ${render(header)}`);
  log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const l of lines) log(`  ${render(l)}`);
}

// ---------------------------------------------------------------------------------------------

/**
 * VACUUM (ANALYZE) after a pool was copied in. A table that just grew by hundreds of thousands of
 * rows would otherwise be vacuumed and analyzed by autovacuum during the measured runs, taking CPU
 * the service's own writes never cause; or, where autovacuum is off (as on our machines), keep the
 * statistics of an empty table and rows without hint bits.
 */
const vacuum = {
  clicks: sql('bench.vacuum_clicks', 'VACUUM (ANALYZE) clicks'),
  sale_events: sql('bench.vacuum_sale_events', 'VACUUM (ANALYZE) sale_events'),
  commissions: sql('bench.vacuum_commissions', 'VACUUM (ANALYZE) commissions'),
  platform_fees: sql('bench.vacuum_platform_fees', 'VACUUM (ANALYZE) platform_fees'),
};

async function settle(db: Database, ...tables: (keyof typeof vacuum)[]): Promise<void> {
  for (const table of tables) await db.many(vacuum[table]);
}

/** Every run of a phase: its warm-up, the measured run and the one at the target rate. */
function runsOf(p: { warm?: PhaseSummary | undefined; measured: PhaseSummary; paced?: PhaseSummary | undefined }): PhaseSummary[] {
  return [p.warm, p.measured, p.paced].filter((run): run is PhaseSummary => run !== undefined);
}

const okOf = (p: Parameters<typeof runsOf>[0]) => runsOf(p).reduce((n, run) => n + run.ok, 0);

/** Requests a write phase's run at the target rate schedules, with a margin. */
const pacedRequests = () => TARGET_WRITE_PER_S * (settings.duration + 1) * 1.1;

/**
 * The p99 at the target rate, when the run kept its schedule: at least 98 % of the scheduled requests
 * answered 2xx and none other (one that falls behind is not at that rate, and its requests wait to
 * be sent).
 */
function pacedP99(run: PhaseSummary | undefined): number | undefined {
  const l = run?.paced;
  if (!run || !l || run.non2xx > 0 || l.count < 0.98 * l.rate * run.duration) return undefined;
  return l.p99;
}

/** What a phase spent per 2xx, in µs of CPU: the answering process, its PostgreSQL backends and wrk. */
interface CpuPerRequest {
  cpuPerOk?: number | undefined;
  pgCpuPerOk?: number | undefined;
  loadCpuPerOk?: number | undefined;
}

/**
 * The most clicks a second the machine's cores could answer at this run's CPU per click (service,
 * PostgreSQL backends and load generator), with every core busy all the time, beside what the
 * ratio target asks: no tuning of waits or batch sizes reaches a rate above this line, only less
 * CPU per click does.
 */
function clickCeiling(click: CpuPerRequest, baseRps: number): string | undefined {
  const { cpuPerOk, pgCpuPerOk, loadCpuPerOk } = click;
  if (cpuPerOk === undefined || pgCpuPerOk === undefined || loadCpuPerOk === undefined) return undefined;
  const cores = availableParallelism();
  const total = cpuPerOk + pgCpuPerOk + loadCpuPerOk;
  const ceiling = (cores * 1e6) / total;
  const targetRps = TARGET_CLICKS_X_BASELINE * baseRps;
  return `click ceiling: ${cores} cores always busy at this run's ${fmt(total, 1)} µs per click (service ${fmt(cpuPerOk, 1)} + ` +
    `PostgreSQL backends ${fmt(pgCpuPerOk, 1)} + load generator ${fmt(loadCpuPerOk, 1)}) answer at most ${fmt(ceiling)}/s = ` +
    `${(ceiling / baseRps).toFixed(2)} x baseline; ${TARGET_CLICKS_X_BASELINE} x (${fmt(targetRps)}/s) needs at most ${fmt((cores * 1e6) / targetRps, 1)} µs per click in all`;
}

async function main(): Promise<number> {
  const started = Date.now();
  log(`ingest benchmark: node ${process.version}, fastify ${fastifyPackage.version}, ${availableParallelism()} CPUs, ` +
    `${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per phase, no pipelining`);
  log(`load generator: ${wrkVersion(WRK)} (${WRK}), -t${settings.threads} -c${settings.connections} --timeout ${REQUEST_TIMEOUT_S}s; ` +
    `p50/p99 from wrk's latency histogram; 2xx counted and ids read per response by the Lua script`);
  log(`load average before start: ${loadText()} (service, PostgreSQL and wrk share these CPUs)`);
  state.tmpDir = await mkdtemp(join(tmpdir(), 'ats-bench-wrk-'));

  // 1. A fresh, migrated database.
  const dbName = `ats_bench_${randomBytes(6).toString('hex')}`;
  await createBenchDatabase(settings.adminUrl, dbName);
  state.dbName = dbName;
  const dbUrl = databaseUrl(settings.adminUrl, dbName);
  const db = await openDatabase({ kind: 'postgres', url: dbUrl, poolSize: 8 });
  state.db = db;
  await migrate(db);
  const pgVersion = (await db.one<{ v: string }>(sql('bench.version', `SELECT current_setting('server_version') AS v`)))!.v;
  log(`database ${dbName} created and migrated (PostgreSQL ${pgVersion})`);

  // 2. One program with a key, a partner and a referral link.
  const workspaceId = await createWorkspace(db, 'Bench workspace');
  await addMember(db, workspaceId, 'owner@bench.example', 'owner', 'Bench owner');
  const mainProgram = await seedProgram(db, workspaceId, 'main');
  log(`seeded program ${mainProgram.programId} (aff code ${mainProgram.affCode})`);

  // 3 and 4. The service and the baseline, each in its own process.
  const nodeArgs = (script: string) => [...(settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] : []), '--import', 'tsx', script];
  const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
  const servicePort = await freePort();
  const service = startChild('service', nodeArgs('main.ts'), {
    cwd: ROOT,
    env: {
      ...baseEnv,
      DATABASE_URL: dbUrl,
      // The distributed ingest refuses to start without it (issue 27).
      SECRETS_KEY: randomBytes(32).toString('base64'),
      PORT: String(servicePort),
      HOST,
      LOG_LEVEL: 'warn',
      TRUST_PROXY: '127.0.0.1',
      SEED_DEMO: 'false',
      DATABASE_POOL_SIZE: '20',
      // The ingest role only, as in the distributed mode; said explicitly because with all roles
      // (and no KAFKA_BROKERS) this process would also relay every click into chDB: about as much
      // CPU again as ingesting it, the relay's cost rather than the ingest path's.
      SERVICE: 'ingest',
    },
  });
  state.children.push(service);
  const baseline = startChild('baseline', ['--import', 'tsx', 'bench/baseline-server.ts'], {
    cwd: ROOT,
    env: { ...baseEnv, PORT: '0' },
    readyPattern: /^listening (\d+)$/,
  });
  state.children.push(baseline);
  const serviceUrl = `http://${HOST}:${servicePort}`;
  await waitForHttp(`${serviceUrl}/healthz`, service, 30_000);
  const baselinePort = Number((await withTimeout(baseline.readyLine, 30_000, 'starting the baseline'))[1]);
  const baselineUrl = `http://${HOST}:${baselinePort}`;
  log(`service on ${serviceUrl} (pid ${service.proc.pid}), baseline on ${baselineUrl} (pid ${baseline.proc.pid})`);

  // 5a. Baseline: the same request shape as a click, on an empty route.
  log('\nphases');
  const clickBody = JSON.stringify({ affiliate_url: `https://shop.bench.example/?aff=${mainProgram.affCode}` });
  // Its answers are read like the clicks' so the load generator does the same work per request.
  const baselinePhase = await phase('baseline', baselineUrl, () => fixedBodySpec('/baseline', clickBody, '"success":(true)', false), { pid: baseline.proc.pid });
  const baselineAnswers = baselinePhase.measured.ok - baselinePhase.measured.unreadable;
  if (baselineAnswers === 0) throw new Error('the baseline never answered { success: true }');
  if (settings.phases === 'all') await stopChild(baseline); // idle from here on; frees its memory for the rest of the run

  // 5b. Clicks. Every acknowledged click id is kept for the durability check (wrk's response()
  // reads it from each 2xx body).
  const smokeClickId = await postClick(serviceUrl, mainProgram.affCode); // acknowledged too: counted below
  const clickSpec = () => fixedBodySpec('/api/v1/track/click', clickBody, '"click_id":"([^"]+)"', true);
  const clickPhase = await phase('click', serviceUrl, clickSpec, { db, pid: service.proc.pid });
  // BENCH_PHASES=click with BENCH_ROUNDS: more baseline and click pairs, alternating.
  const rounds = [{ baseline: baselinePhase, click: clickPhase }];
  for (let round = 2; settings.phases === 'click' && round <= settings.rounds; round++) {
    const base = await phase(`baseline round ${round}`, baselineUrl, () => fixedBodySpec('/baseline', clickBody, '"success":(true)', false), { pid: baseline.proc.pid });
    rounds.push({ baseline: base, click: await phase(`click round ${round}`, serviceUrl, clickSpec, { db, pid: service.proc.pid }) });
  }
  const clickRuns = rounds.flatMap((r) => [...(r.click.warm ? [r.click.warm] : []), r.click.measured]);
  const ackedClickIds = clickRuns.flatMap((run) => run.ids);
  const unreadableClickBodies = clickRuns.reduce((n, run) => n + run.unreadable, 0);

  // 7. Durability: every acknowledged click (smoke + warm-up + measured) has its row and its event.
  const acknowledgedClicks = 1 + clickRuns.reduce((n, run) => n + run.ok, 0);
  const clickRows = await settledCount(db, count.clicks);
  const clickEventRows = await countOf(db, count.clickEvents);
  const allAckedIds = [smokeClickId, ...ackedClickIds];
  const ackedIdsFound = await countOf(db, count.clicksAmong, [allAckedIds]);
  const ackedEventsFound = await countOf(db, count.clickEventsAmong, [allAckedIds]);
  const distinctAckedIds = new Set(allAckedIds).size;
  const clicksDurable =
    unreadableClickBodies === 0 &&
    distinctAckedIds === acknowledgedClicks &&
    ackedIdsFound === acknowledgedClicks &&
    ackedEventsFound === acknowledgedClicks &&
    clickRows >= acknowledgedClicks &&
    clickEventRows >= acknowledgedClicks;

  if (settings.phases === 'click') {
    log('\nresults (measured runs; warm-up runs are counted only for durability)');
    table([baselinePhase.measured, clickPhase.measured]);
    if (clickPhase.measured.non2xx > 0) log(`  click status codes: ${JSON.stringify(clickPhase.measured.statusCodes)}`);
    const ratio = clickPhase.measured.rps / baselinePhase.measured.rps;
    const cpu = (p: typeof clickPhase) => (p.cpuPerOk === undefined ? 'CPU n/a' : `${fmt(p.cpuPerOk, 1)} µs CPU per 2xx`);
    log(`\n  baseline ${fmt(baselinePhase.measured.rps)} req/s, ${cpu(baselinePhase)}`);
    log(`  click    ${fmt(clickPhase.measured.rps)} req/s = ${ratio.toFixed(2)} x baseline (target ${TARGET_CLICKS_X_BASELINE}), ${cpu(clickPhase)}` +
      `${clickPhase.cpuPerOk !== undefined && baselinePhase.cpuPerOk !== undefined ? ` = ${(clickPhase.cpuPerOk / baselinePhase.cpuPerOk).toFixed(2)} x baseline` : ''}`);
    if (clickPhase.pgCpuPerOk !== undefined) log(`  click PostgreSQL CPU (the bench database's backends): ${fmt(clickPhase.pgCpuPerOk, 1)} µs per 2xx`);
    const ceiling = clickCeiling(clickPhase, baselinePhase.measured.rps);
    if (ceiling) log(`  ${ceiling}`);
    if (clickPhase.wal) {
      const per = Math.max(1, clickPhase.measured.ok);
      log(`  click WAL: ${(clickPhase.wal.syncs / per).toFixed(3)} syncs, ${(clickPhase.wal.records / per).toFixed(1)} records, ${fmt(clickPhase.wal.bytes / per)} bytes per 2xx`);
    }
    log(`  acknowledged clicks ${acknowledgedClicks}; found ${ackedIdsFound} in clicks, ${ackedEventsFound} in the outbox; every one committed: ${clicksDurable ? 'yes' : 'no'}`);
    if (rounds.length > 1) {
      const ratios = rounds.map((r) => r.click.measured.rps / r.baseline.measured.rps);
      log(`  rounds (click/baseline req/s): ${rounds.map((r, i) => `${fmt(r.click.measured.rps)}/${fmt(r.baseline.measured.rps)} = ${ratios[i]!.toFixed(2)}`).join('; ')}`);
      const sorted = [...ratios].sort((a, b) => a - b);
      log(`  median ratio of ${rounds.length} rounds: ${sorted[Math.floor((sorted.length - 1) / 2)]!.toFixed(2)} x baseline (target ${TARGET_CLICKS_X_BASELINE})`);
    }
    log(`  load average after: ${loadText()}`);
    return clicksDurable ? 0 : 1;
  }

  // 5c. Sales. The limit is 120 sales per key per minute, so the load rotates over enough programs
  // (each with its key, partner and clicks) to stay under it. A sale is far more work than a click
  // (a transaction of about ten statements against one), so the measured click rate bounds it.
  const plannedSales = Math.max(clickPhase.measured.rps, 100) * (settings.warmup + settings.duration + 1) * 1.25 + pacedRequests();
  const programCount = Math.min(MAX_PROGRAMS, Math.max(4, Math.ceil(plannedSales / SALES_PER_KEY)));
  const clicksPerProgram = Math.max(5, Math.ceil(settings.clickPool / programCount));
  log(`  sale: preparing ${programCount} programs with keys and ${clicksPerProgram} clicks each (limit ${SALE_LIMIT_PER_KEY_PER_MIN} sales/min per key)`);
  const prepStarted = Date.now();
  const targets = await inParallel(programCount, 6, async (i) => {
    const program = await seedProgram(db, workspaceId, `s${i}`);
    return { ...program, clickIds: [] as string[] };
  });
  await inParallel(programCount * clicksPerProgram, 16, async (j) => {
    const target = targets[j % programCount]!;
    target.clickIds.push(await postClick(serviceUrl, target.affCode));
  });
  log(`  sale: prepared in ${((Date.now() - prepStarted) / 1000).toFixed(1)} s`);

  const perKey = new Array<number>(programCount).fill(0);
  const keys = targets.map((t) => t.apiKey);
  const salePhase = await keyedPhase('sale', serviceUrl, service.proc.pid, {
    path: '/api/v1/track/sale',
    keys,
    pools: targets.map((t) => t.clickIds.map((id) => JSON.stringify(id))),
    wrap: true,
    body: `'{"transaction_id":"bench-sale-' .. STAGE .. '-t' .. tid .. '-' .. n .. '","amount_cents":1999,"click_id":' .. item .. ',"currency":"USD"}'`,
    answer: '"transaction_id":"([^"]+)"',
  }, perKey, db, TARGET_WRITE_PER_S);
  const ackedTransactionIds = runsOf(salePhase).flatMap((run) => run.ids);
  const unreadableSaleBodies = runsOf(salePhase).reduce((n, run) => n + run.unreadable, 0);

  const acknowledgedSales = okOf(salePhase);
  const saleRows = await settledCount(db, count.sales);
  const ackedSalesFound = await countOf(db, count.salesAmong, [ackedTransactionIds]);
  const saleEventRows = await countOf(db, count.saleEvents);
  const commissionRows = await countOf(db, count.commissions);
  const salesDurable =
    unreadableSaleBodies === 0 &&
    ackedTransactionIds.length === acknowledgedSales &&
    ackedSalesFound === acknowledgedSales &&
    saleRows >= acknowledgedSales;

  // 5d. Leads: one per click, each with its own customer key, on clicks copied in SQL from one real
  // click of each program. The lead and refund pools must outlast their runs: they may be faster than sales.
  const poolPerProgram = Math.ceil(
    (settings.writePool ||
      Math.min(300_000, Math.max(2_000, salePhase.measured.rps * (settings.warmup + settings.duration + 1) * 4) + pacedRequests())) / programCount,
  );
  const leadPools = await inParallel(programCount, 4, async (i) =>
    (await db.many<{ click_id: string }>(benchSql.copyClicks, [targets[i]!.clickIds[0], poolPerProgram])).map((r) => JSON.stringify(r.click_id)),
  );
  await settle(db, 'clicks');
  log(`  lead: ${fmt(poolPerProgram * programCount)} clicks made for leads (${poolPerProgram} per program)`);
  const leadPhase = await keyedPhase('lead', serviceUrl, service.proc.pid, {
    path: '/api/v1/track/lead',
    keys,
    pools: leadPools,
    wrap: false,
    body: `'{"click_id":' .. item .. ',"customer_key":"bench-lead-' .. STAGE .. '-t' .. tid .. '-' .. n .. '"}'`,
    answer: '"click_id":"([^"]+)"',
  }, new Array<number>(programCount).fill(0), db, TARGET_WRITE_PER_S);
  const ackedLeadClicks = runsOf(leadPhase).flatMap((run) => run.ids);
  const acknowledgedLeads = okOf(leadPhase);
  await settledCount(db, count.leadEvents);
  const ackedLeadsFound = await countOf(db, count.leadsAmong, [ackedLeadClicks]);
  const leadsDurable = ackedLeadClicks.length === acknowledgedLeads && ackedLeadsFound === acknowledgedLeads;

  // 5e. Refunds: each paid sale once, with its program's key (the sales' limit bucket).
  const refundPools = await inParallel(programCount, 4, async (i) =>
    (await db.many<{ transaction_id: string }>(benchSql.copySales, [targets[i]!.programId, poolPerProgram])).map((r) => JSON.stringify(r.transaction_id)),
  );
  await settle(db, 'sale_events', 'commissions', 'platform_fees');
  log(`  refund: ${fmt(poolPerProgram * programCount)} paid sales made to refund (${poolPerProgram} per program)`);
  const refundPhase = await keyedPhase('refund', serviceUrl, service.proc.pid, {
    path: '/api/v1/track/refund',
    keys,
    pools: refundPools,
    wrap: false,
    body: `'{"transaction_id":' .. item .. '}'`,
    answer: '"transaction_id":"([^"]+)"',
  }, perKey, db, TARGET_WRITE_PER_S);
  const ackedRefunds = runsOf(refundPhase).flatMap((run) => run.ids);
  const acknowledgedRefunds = okOf(refundPhase);
  const ackedRefundsFound = await countOf(db, count.refundsAmong, [ackedRefunds]);
  // A pool that ran out repeats refunds (answered 200 again), so compare distinct ids.
  const refundsDurable = ackedRefunds.length === acknowledgedRefunds && ackedRefundsFound === new Set(ackedRefunds).size;

  // 6. Report.
  const phases = [baselinePhase, clickPhase, salePhase, leadPhase, refundPhase];
  const writes = [salePhase, leadPhase, refundPhase];
  log('\nresults (measured runs; warm-up runs are counted only for durability)');
  table(phases.map((p) => p.measured));
  const warmRows = phases.map((p) => p.warm).filter((w): w is PhaseSummary => w !== undefined);
  if (warmRows.length) {
    log('\nwarm-up runs');
    table(warmRows);
  }
  const pacedRows = writes.map((p) => p.paced).filter((w): w is PhaseSummary => w !== undefined);
  log(`\nat the target rate: ${fmt(TARGET_WRITE_PER_S)}/s on a fixed schedule for ${settings.duration} s (open loop), latency from each request's slot`);
  log('  phase            2xx   of scheduled  p50 ms  p99 ms  max ms  sends late p99 ms');
  for (const p of pacedRows) {
    const l = p.paced!;
    log(`  ${p.name.padEnd(14)}  ${fmt(p.ok).padStart(6)}  ${fmt(l.rate * p.duration).padStart(12)}  ${fmt(l.p50, 1).padStart(6)}  ${fmt(l.p99, 1).padStart(6)}` +
      `  ${fmt(l.max, 1).padStart(6)}  ${fmt(l.lagP99, 1).padStart(17)}`);
  }
  for (const p of [...phases.map((x) => x.measured), ...warmRows, ...pacedRows]) {
    if (p.non2xx > 0) log(`  ${p.name} status codes: ${JSON.stringify(p.statusCodes)}`);
  }

  const baseRps = baselinePhase.measured.rps;
  const baseCpu = baselinePhase.cpuPerOk;
  const xBase = (rps: number) => `${(rps / baseRps).toFixed(2)} x baseline`;
  const xCpu = (cpu: number | undefined) => (cpu === undefined || baseCpu === undefined ? 'CPU n/a' : `${fmt(cpu, 1)} µs CPU = ${(cpu / baseCpu).toFixed(2)} x baseline`);
  log('\nrelative to the baseline (bare Fastify, empty POST route, same load; Node CPU per 2xx of the answering process,');
  log('/proc/<pid>/stat, steadier than req/s on a busy machine)');
  log(`  baseline  ${fmt(baseRps)} req/s, ${baseCpu === undefined ? 'CPU n/a' : `${fmt(baseCpu, 1)} µs CPU`}`);
  for (const p of [clickPhase, ...writes]) {
    log(`  ${p.measured.name.padEnd(8)}  ${fmt(p.measured.rps)} req/s = ${xBase(p.measured.rps)}; ${xCpu(p.cpuPerOk)}`);
  }

  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  log('\ntargets (reported, not asserted)');
  log(`  clicks >= ${fmt(TARGET_CLICKS_PER_S)}/s: ${fmt(clickPhase.measured.rps)}/s  ${verdict(clickPhase.measured.rps >= TARGET_CLICKS_PER_S)}`);
  log(`  click p99 <= ${TARGET_P99_MS} ms: ${fmt(clickPhase.measured.p99, 1)} ms  ${verdict(clickPhase.measured.p99 <= TARGET_P99_MS)}`);
  log(`  clicks >= ${TARGET_CLICKS_X_BASELINE} x baseline: ${xBase(clickPhase.measured.rps)}  ${verdict(clickPhase.measured.rps >= TARGET_CLICKS_X_BASELINE * baseRps)}`);
  const ceiling = clickCeiling(clickPhase, baseRps);
  if (ceiling) log(`    ${ceiling}`);
  for (const p of writes) {
    const name = `${p.measured.name}s`.padEnd(7);
    const atRate = pacedP99(p.paced);
    log(`  ${name} >= ${fmt(TARGET_WRITE_PER_S)}/s: ${fmt(p.measured.rps)}/s (${xBase(p.measured.rps)})  ${verdict(p.measured.rps >= TARGET_WRITE_PER_S)}; ` +
      `p99 at ${fmt(TARGET_WRITE_PER_S)}/s <= ${TARGET_WRITE_P99_MS} ms: ${atRate === undefined ? 'not valid (schedule not kept, or non-2xx)' : `${fmt(atRate, 1)} ms`}  ` +
      `${verdict(atRate !== undefined && atRate <= TARGET_WRITE_P99_MS)} (saturated, ${settings.connections} connections: ${fmt(p.measured.p99, 1)} ms); ` +
      `CPU <= ${TARGET_WRITE_CPU_US} µs: ${p.cpuPerOk === undefined ? 'n/a' : `${fmt(p.cpuPerOk, 1)} µs`}  ${verdict(p.cpuPerOk !== undefined && p.cpuPerOk <= TARGET_WRITE_CPU_US)}`);
  }
  for (const p of [leadPhase, refundPhase]) {
    if (p.exhausted) log(`  ${p.measured.name}: the pool ran out, later requests reused an item: their figures are not valid (set BENCH_WRITE_POOL)`);
  }

  log('\nPostgreSQL WAL during the measured runs (cluster-wide pg_stat_wal; commit cost) and the bench database\'s transactions (statements: round trips)');
  for (const p of [clickPhase, ...writes]) {
    if (!p.wal) {
      log(`  ${p.measured.name}: pg_stat_wal not available`);
      continue;
    }
    const per = Math.max(1, p.measured.ok);
    log(`  ${p.measured.name}: ${fmt(p.wal.syncs)} WAL syncs (${(p.wal.syncs / per).toFixed(2)} per 2xx), ` +
      `${(p.wal.records / per).toFixed(1)} records and ${fmt(p.wal.bytes / per)} bytes per 2xx; ${(p.wal.xacts / per).toFixed(2)} transactions per 2xx`);
  }

  const tooMany = phases.flatMap((p) => runsOf(p)).reduce((n, p) => n + p.tooMany, 0);
  log('\nrate limits');
  log(`  429 responses in all runs: ${tooMany}${tooMany === 0 ? '' : '  <- the load hit the service limits: the figures above are not valid'}`);
  log(`  sale and refund requests per key: max ${Math.max(...perKey)} over ${programCount} keys (limit ${SALE_LIMIT_PER_KEY_PER_MIN}/min per key); ` +
    `client IPs: a distinct one per request, ${fmt(ipCounter)} allocated`);

  log('\ndurability');
  log(`  acknowledged clicks (smoke 1 + warm-up ${clickPhase.warm?.ok ?? 0} + measured ${clickPhase.measured.ok}): ${acknowledgedClicks}`);
  log(`  rows in clicks: ${clickRows}; outbox click.recorded rows: ${clickEventRows}` +
    `${clickRows > acknowledgedClicks ? ` (${clickRows - acknowledgedClicks} more: requests in flight when the load stopped, committed but never acknowledged)` : ''}`);
  log(`  acknowledged click ids found (read from every 2xx body): ${ackedIdsFound} of ${distinctAckedIds} in clicks, ${ackedEventsFound} in the outbox` +
    `${unreadableClickBodies ? `; 2xx bodies without a click_id: ${unreadableClickBodies}` : ''}`);
  log(`  every acknowledged click committed: ${clicksDurable ? 'yes' : 'no'}`);
  log(`  acknowledged sales (warm-up ${salePhase.warm?.ok ?? 0} + measured ${salePhase.measured.ok} + at the target rate ${salePhase.paced?.ok ?? 0}): ${acknowledgedSales}; bench sale rows: ${saleRows}; ` +
    `acknowledged transaction ids found: ${ackedSalesFound} of ${ackedTransactionIds.length}; outbox sale.recorded rows: ${saleEventRows}; commissions: ${commissionRows}` +
    `${unreadableSaleBodies ? `; 2xx bodies without a transaction_id: ${unreadableSaleBodies}` : ''}`);
  log(`  every acknowledged sale committed: ${salesDurable ? 'yes' : 'no'}`);
  log(`  acknowledged leads: ${acknowledgedLeads}; found as customers with their key: ${ackedLeadsFound}; every one committed: ${leadsDurable ? 'yes' : 'no'}`);
  log(`  acknowledged refunds: ${acknowledgedRefunds} (${new Set(ackedRefunds).size} distinct sales); their sales refunded with a refund row: ${ackedRefundsFound}; ` +
    `every one committed: ${refundsDurable ? 'yes' : 'no'}`);

  const serviceLogLines = service.tail.filter((l) => l.includes('"level"'));
  if (serviceLogLines.length) {
    log('\nservice warnings/errors (last lines)');
    for (const l of serviceLogLines.slice(-10)) log(`  ${l.slice(0, 400)}`);
  }
  if (!running(service)) log(`\nthe service exited during the run:\n${service.tail.join('\n')}`);

  log(`\nrun time before cleanup: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return clicksDurable && salesDurable && leadsDurable && refundsDurable ? 0 : 1;
}

process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
const watchdog = setTimeout(() => {
  log(`\nwatchdog: the run exceeded ${WATCHDOG_MS / 1000} s; stopping`);
  for (const child of state.children) if (running(child)) child.proc.kill('SIGKILL');
  killWrkRuns();
  void withTimeout(cleanup(), 20_000, 'cleanup')
    .catch(() => {})
    .finally(() => process.exit(3));
}, WATCHDOG_MS);
watchdog.unref();

let exitCode: number;
try {
  exitCode = await main();
} catch (error) {
  log(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  for (const child of state.children) if (child.tail.length) log(`\n${child.name} output (last lines):\n${child.tail.join('\n')}`);
  exitCode = 2;
}
log('\ncleanup');
await withTimeout(cleanup(), 60_000, 'cleanup').catch((e: unknown) => log(String(e)));
process.exit(exitCode);
