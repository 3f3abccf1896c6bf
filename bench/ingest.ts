/**
 * Ingest benchmark (npm run bench:ingest). Not a test: it reports throughput and latency and
 * fails (exit 1) only when an acknowledged click or sale is missing from the database.
 *
 * Against a real PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 * it creates a throw-away database ats_bench_<hex>, migrates and seeds it with the domain
 * functions, starts the real service (ingest/server.ts) and a bare Fastify baseline as child
 * processes on loopback, drives both with autocannon, checks durability, and drops the database.
 *
 * Knobs (all optional): BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 50), BENCH_CLICK_POOL (clicks created for the sale phase, default
 * 3000), BENCH_CPU_PROF (a directory: the service runs with --cpu-prof and writes its profile there).
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import fastifyPackage from 'fastify/package.json' with { type: 'json' };
import pg from 'pg';
import { openDatabase, sql, type Database } from '../core/db.js';
import { migrate } from '../core/migrate.js';
import { issueProgramKey } from '../ingest/domain/api-keys.js';
import { createPartner, createProgram, type ProgramSettings } from '../ingest/domain/programs.js';
import { addMember, createWorkspace } from '../ingest/domain/workspaces.js';
import { freePort, running, startChild, stopChild, waitForHttp, type Child } from './processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const BENCH_DATABASE = /^ats_bench_[a-z0-9]+$/;
const HOST = '127.0.0.1';

/** The service's limits the load must stay under (ingest/routes/track.ts). */
const SALE_LIMIT_PER_KEY_PER_MIN = 120;
/** Sales planned per key: well under the limit even if a whole run fell into one minute window. */
const SALES_PER_KEY = 100;

const TARGET_CLICKS_PER_S = 5_000;
const TARGET_P99_MS = 50;

/** Hard stop for the whole run; every step is bounded on its own, this is belt and braces. */
const WATCHDOG_MS = 5 * 60_000;

function intSetting(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

const settings = {
  adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
  duration: intSetting('BENCH_DURATION', 10, 1, 60),
  warmup: intSetting('BENCH_WARMUP', 2, 0, 30),
  connections: intSetting('BENCH_CONNECTIONS', 50, 1, 500),
  clickPool: intSetting('BENCH_CLICK_POOL', 3_000, 100, 20_000),
  cpuProfDir: process.env.BENCH_CPU_PROF || undefined,
};

// ---------------------------------------------------------------------------------------------
// Cleanup state: everything the run creates is registered here as soon as it exists.

const state: { children: Child[]; db: Database | undefined; dbName: string | undefined; cleaning: Promise<void> | undefined } = {
  children: [],
  db: undefined,
  dbName: undefined,
  cleaning: undefined,
};

const log = (line = '') => process.stdout.write(`${line}\n`);

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what} took more than ${ms} ms`)))]);
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: settings.adminUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    await withTimeout(admin.query(text), 30_000, text);
  } finally {
    await admin.end();
  }
}

/** Destructive: refuses any name that is not a benchmark database. */
async function dropBenchDatabase(name: string): Promise<void> {
  if (!BENCH_DATABASE.test(name)) throw new Error(`refusing to drop ${name}: not a benchmark database`);
  await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

function cleanup(): Promise<void> {
  state.cleaning ??= (async () => {
    const stops = await Promise.all(
      state.children.map(async (child) => ({ child, result: await stopChild(child).catch(() => undefined) })),
    );
    for (const { child, result } of stops) {
      if (result) log(`stopped ${child.name}: exit code ${result.code ?? '-'}${result.signal ? `, signal ${result.signal}` : ''}${result.killed ? ' (SIGKILL after grace period)' : ''}`);
    }
    if (state.db) await withTimeout(state.db.close(), 10_000, 'closing the bench pool').catch((e: unknown) => log(`closing the bench pool: ${String(e)}`));
    if (state.dbName) {
      try {
        await dropBenchDatabase(state.dbName);
        log(`dropped database ${state.dbName}`);
      } catch (error) {
        log(`could not drop database ${state.dbName}: ${String(error)}`);
      }
    }
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

/** Every request gets its own client address (TRUST_PROXY=true makes the service use it): 10.x.y.z from a counter. */
let ipCounter = 0;
function nextIp(): string {
  const n = ++ipCounter;
  return `10.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Other work on the machine skews every figure; the load average says whether there was any. */
const loadText = () => loadavg().map((l) => l.toFixed(2)).join(' ');

const is2xx = (status: number) => status >= 200 && status < 300;

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
  statusCodes: Record<string, number>;
  duration: number;
}

function summarize(name: string, result: autocannon.Result): PhaseSummary {
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    non2xx: result.non2xx,
    // autocannon counts a timeout as an error too; here they are reported apart.
    errors: result.errors - result.timeouts,
    timeouts: result.timeouts,
    tooMany: statusCodes['429'] ?? 0,
    statusCodes,
    duration: result.duration,
  };
}

async function drive(url: string, requests: autocannon.Request[], duration: number): Promise<autocannon.Result> {
  // autocannon stops on its own timer after `duration` seconds; requests time out after 10 s.
  return autocannon({ url, connections: settings.connections, duration, pipelining: 1, timeout: 10, requests });
}

interface WalStats {
  records: number;
  bytes: number;
  writes: number;
  syncs: number;
}

const walStats = sql(
  'bench.wal_stats',
  `SELECT wal_records AS records, wal_bytes AS bytes, wal_write AS writes, wal_sync AS syncs FROM pg_stat_wal`,
);

/** Cluster-wide WAL counters (PostgreSQL 14+); undefined where the view is missing. */
async function walSnapshot(db: Database | undefined): Promise<WalStats | undefined> {
  if (!db) return undefined;
  return db.one<WalStats>(walStats).catch(() => undefined);
}

/** A warm-up run (reported only as counts) then the measured run, with the same request definitions. */
async function phase(name: string, url: string, requests: (stage: 'warmup' | 'measure') => autocannon.Request[], db?: Database) {
  let warm: PhaseSummary | undefined;
  if (settings.warmup > 0) {
    log(`  ${name}: warm-up ${settings.warmup} s`);
    warm = summarize(`${name} warm-up`, await drive(url, requests('warmup'), settings.warmup));
  }
  log(`  ${name}: measuring ${settings.duration} s, ${settings.connections} connections (machine load average ${loadText()})`);
  const walBefore = await walSnapshot(db);
  const measured = summarize(name, await drive(url, requests('measure'), settings.duration));
  const walAfter = await walSnapshot(db);
  const wal =
    walBefore && walAfter
      ? {
          records: walAfter.records - walBefore.records,
          bytes: walAfter.bytes - walBefore.bytes,
          writes: walAfter.writes - walBefore.writes,
          syncs: walAfter.syncs - walBefore.syncs,
        }
      : undefined;
  log(`  ${name}: ${measured.rps.toFixed(0)} req/s, p99 ${measured.p99} ms, 2xx ${measured.ok}, non-2xx ${measured.non2xx}`);
  return { warm, measured, wal };
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

// ---------------------------------------------------------------------------------------------
// Seeding (domain functions, as ingest/demo.ts does).

interface SeededProgram {
  programId: number;
  apiKey: string;
  affCode: string;
}

function programSettings(name: string): ProgramSettings {
  return {
    name,
    domain: 'shop.bench.example',
    commission_type: 'percent',
    commission_rate: 10,
    attribution_window_days: 60,
    lead_auth: 'server_required',
    paymentTrackingMode: 's2s',
    allowed_origins: [],
  };
}

async function seedProgram(db: Database, workspaceId: number, label: string): Promise<SeededProgram> {
  const program = await createProgram(db, workspaceId, programSettings(`Bench program ${label}`));
  const { apiKey } = await issueProgramKey(db, program.id);
  const partner = await createPartner(db, program.id, { name: `Bench partner ${label}`, email: `partner-${label}@bench.example`, affCode: `bench-${label}` });
  return { programId: program.id, apiKey, affCode: partner.affCode };
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
};

async function countOf(db: Database, query: ReturnType<typeof sql>, params: unknown[] = []): Promise<number> {
  return (await db.one<{ n: number }>(query, params))!.n;
}

/** Requests still in the service when autocannon stopped may commit a moment later: wait until the count settles (bounded). */
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
  const header = ['phase', 'req/s (mean)', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'timeouts', '429'];
  const lines = rows.map((r) => [r.name, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.ok), fmt(r.non2xx), fmt(r.errors), fmt(r.timeouts), fmt(r.tooMany)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  log(`  ${render(header)}`);
  log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const l of lines) log(`  ${render(l)}`);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  log(`ingest benchmark: node ${process.version}, fastify ${fastifyPackage.version}, ${availableParallelism()} CPUs, ` +
    `${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per phase, pipelining 1`);
  log(`load average before start: ${loadText()} (service, PostgreSQL and autocannon share these CPUs)`);

  // 1. A fresh, migrated database.
  const dbName = `ats_bench_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${dbName}`);
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
  const service = startChild('service', nodeArgs('ingest/server.ts'), {
    cwd: ROOT,
    env: {
      ...baseEnv,
      DATABASE_URL: dbUrl,
      PORT: String(servicePort),
      HOST,
      LOG_LEVEL: 'warn',
      TRUST_PROXY: 'true',
      SEED_DEMO: 'false',
      DATABASE_POOL_SIZE: '20',
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
  // Its answers are parsed like the clicks' so the load generator does the same work per request.
  let baselineAnswers = 0;
  const baselinePhase = await phase('baseline', baselineUrl, () => [
    {
      method: 'POST',
      path: '/baseline',
      headers: { 'content-type': 'application/json' },
      body: clickBody,
      setupRequest: (req) => {
        req.headers['x-forwarded-for'] = nextIp();
        return req;
      },
      onResponse: (status, body) => {
        try {
          if (is2xx(status) && (JSON.parse(body) as { success?: boolean }).success === true) baselineAnswers++;
        } catch {
          // counted as not answered
        }
      },
    },
  ]);
  if (baselineAnswers === 0) throw new Error('the baseline never answered { success: true }');
  await stopChild(baseline); // idle from here on; frees its memory for the rest of the run

  // 5b. Clicks. Every acknowledged click id is kept for the durability check.
  const smokeClickId = await postClick(serviceUrl, mainProgram.affCode); // acknowledged too: counted below
  const ackedClickIds: string[] = [];
  let unreadableClickBodies = 0;
  const clickRequests = (): autocannon.Request[] => [
    {
      method: 'POST',
      path: '/api/v1/track/click',
      headers: { 'content-type': 'application/json' },
      body: clickBody,
      setupRequest: (req) => {
        req.headers['x-forwarded-for'] = nextIp();
        return req;
      },
      onResponse: (status, body) => {
        if (!is2xx(status)) return;
        try {
          ackedClickIds.push((JSON.parse(body) as { click_id: string }).click_id);
        } catch {
          unreadableClickBodies++;
        }
      },
    },
  ];
  const clickPhase = await phase('click', serviceUrl, clickRequests, db);

  // 7. Durability: every acknowledged click (smoke + warm-up + measured) has its row and its event.
  const acknowledgedClicks = 1 + (clickPhase.warm?.ok ?? 0) + clickPhase.measured.ok;
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

  // 5c. Sales. The limit is 120 sales per key per minute, so the load rotates over enough programs
  // (each with its key, partner and clicks) to stay under it. A sale is far more work than a click
  // (a transaction of about ten statements against one), so the measured click rate bounds it.
  const plannedSales = Math.max(clickPhase.measured.rps, 100) * (settings.warmup + settings.duration + 1) * 1.25;
  const programCount = Math.min(1_000, Math.max(4, Math.ceil(plannedSales / SALES_PER_KEY)));
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

  let saleCounter = 0;
  const salesPerKey = new Array<number>(programCount).fill(0);
  const ackedTransactionIds: string[] = [];
  let unreadableSaleBodies = 0;
  const saleRequests = (stage: 'warmup' | 'measure'): autocannon.Request[] => [
    {
      method: 'POST',
      path: '/api/v1/track/sale',
      headers: { 'content-type': 'application/json' },
      setupRequest: (req) => {
        const i = saleCounter++;
        const target = targets[i % programCount]!;
        salesPerKey[i % programCount]!++;
        const clickId = target.clickIds[Math.floor(i / programCount) % target.clickIds.length]!;
        req.headers['x-forwarded-for'] = nextIp();
        req.headers.authorization = `Bearer ${target.apiKey}`;
        req.body = JSON.stringify({
          transaction_id: `bench-${stage === 'warmup' ? 'sale-warmup' : 'sale'}-${i}`,
          amount_cents: 1999,
          click_id: clickId,
          currency: 'USD',
        });
        return req;
      },
      onResponse: (status, body) => {
        if (!is2xx(status)) return;
        try {
          ackedTransactionIds.push((JSON.parse(body) as { data: { transaction_id: string } }).data.transaction_id);
        } catch {
          unreadableSaleBodies++;
        }
      },
    },
  ];
  const salePhase = await phase('sale', serviceUrl, saleRequests, db);

  const acknowledgedSales = (salePhase.warm?.ok ?? 0) + salePhase.measured.ok;
  const saleRows = await settledCount(db, count.sales);
  const ackedSalesFound = await countOf(db, count.salesAmong, [ackedTransactionIds]);
  const saleEventRows = await countOf(db, count.saleEvents);
  const commissionRows = await countOf(db, count.commissions);
  const salesDurable =
    unreadableSaleBodies === 0 &&
    ackedTransactionIds.length === acknowledgedSales &&
    ackedSalesFound === acknowledgedSales &&
    saleRows >= acknowledgedSales;

  // 6. Report.
  const phases = [baselinePhase, clickPhase, salePhase];
  log('\nresults (measured runs; warm-up runs are counted only for durability)');
  table(phases.map((p) => p.measured));
  const warmRows = phases.map((p) => p.warm).filter((w): w is PhaseSummary => w !== undefined);
  if (warmRows.length) {
    log('\nwarm-up runs');
    table(warmRows);
  }
  for (const p of [...phases.map((x) => x.measured), ...warmRows]) {
    if (p.non2xx > 0) log(`  ${p.name} status codes: ${JSON.stringify(p.statusCodes)}`);
  }

  const baseRps = baselinePhase.measured.rps;
  log('\nrelative to the baseline (bare Fastify, empty POST route, same load)');
  log(`  baseline  = ${fmt(baseRps)} req/s`);
  log(`  clicks/s  = ${(clickPhase.measured.rps / baseRps).toFixed(2)} x baseline`);
  log(`  sales/s   = ${(salePhase.measured.rps / baseRps).toFixed(2)} x baseline`);

  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  log('\ntargets (reported, not asserted)');
  log(`  clicks >= ${fmt(TARGET_CLICKS_PER_S)}/s: ${fmt(clickPhase.measured.rps)}/s  ${verdict(clickPhase.measured.rps >= TARGET_CLICKS_PER_S)}`);
  log(`  click p99 <= ${TARGET_P99_MS} ms: ${fmt(clickPhase.measured.p99, 1)} ms  ${verdict(clickPhase.measured.p99 <= TARGET_P99_MS)}`);
  log(`  (sale p99 for reference: ${fmt(salePhase.measured.p99, 1)} ms  ${verdict(salePhase.measured.p99 <= TARGET_P99_MS)} against the same ${TARGET_P99_MS} ms)`);

  log('\nPostgreSQL WAL during the measured runs (cluster-wide pg_stat_wal; commit cost)');
  for (const p of [clickPhase, salePhase]) {
    if (!p.wal) {
      log(`  ${p.measured.name}: pg_stat_wal not available`);
      continue;
    }
    const per = Math.max(1, p.measured.ok);
    log(`  ${p.measured.name}: ${fmt(p.wal.syncs)} WAL syncs (${(p.wal.syncs / per).toFixed(2)} per 2xx), ` +
      `${(p.wal.records / per).toFixed(1)} records and ${fmt(p.wal.bytes / per)} bytes per 2xx`);
  }

  const tooMany = phases.flatMap((p) => [p.measured, ...(p.warm ? [p.warm] : [])]).reduce((n, p) => n + p.tooMany, 0);
  log('\nrate limits');
  log(`  429 responses in all runs: ${tooMany}${tooMany === 0 ? '' : '  <- the load hit the service limits: the figures above are not valid'}`);
  log(`  sale requests per key: max ${Math.max(...salesPerKey)} over ${programCount} keys (limit ${SALE_LIMIT_PER_KEY_PER_MIN}/min per key); distinct client IPs used: ${fmt(ipCounter)}`);

  log('\ndurability');
  log(`  acknowledged clicks (smoke 1 + warm-up ${clickPhase.warm?.ok ?? 0} + measured ${clickPhase.measured.ok}): ${acknowledgedClicks}`);
  log(`  rows in clicks: ${clickRows}; outbox click.recorded rows: ${clickEventRows}` +
    `${clickRows > acknowledgedClicks ? ` (${clickRows - acknowledgedClicks} more: requests in flight when the load stopped, committed but never acknowledged)` : ''}`);
  log(`  acknowledged click ids found: ${ackedIdsFound} of ${distinctAckedIds} in clicks, ${ackedEventsFound} in the outbox`);
  log(`  every acknowledged click committed: ${clicksDurable ? 'yes' : 'no'}`);
  log(`  acknowledged sales (warm-up ${salePhase.warm?.ok ?? 0} + measured ${salePhase.measured.ok}): ${acknowledgedSales}; bench sale rows: ${saleRows}; ` +
    `acknowledged transaction ids found: ${ackedSalesFound}; outbox sale.recorded rows: ${saleEventRows}; commissions: ${commissionRows}`);
  log(`  every acknowledged sale committed: ${salesDurable ? 'yes' : 'no'}`);

  const serviceLogLines = service.tail.filter((l) => l.includes('"level"'));
  if (serviceLogLines.length) {
    log('\nservice warnings/errors (last lines)');
    for (const l of serviceLogLines.slice(-10)) log(`  ${l.slice(0, 400)}`);
  }
  if (!running(service)) log(`\nthe service exited during the run:\n${service.tail.join('\n')}`);

  log(`\nrun time before cleanup: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return clicksDurable && salesDurable ? 0 : 1;
}

process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
const watchdog = setTimeout(() => {
  log(`\nwatchdog: the run exceeded ${WATCHDOG_MS / 1000} s; stopping`);
  for (const child of state.children) if (running(child)) child.proc.kill('SIGKILL');
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
