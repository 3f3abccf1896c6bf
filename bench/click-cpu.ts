/**
 * CPU per click (npx tsx bench/click-cpu.ts). Throughput on a shared machine swings with whatever
 * else runs; the CPU time the Node process spends per answered request hardly does. This script
 * runs the real service (buildApp, real PostgreSQL) and a bare Fastify route in this one process,
 * drives each in turn over loopback HTTP with wrk, and reports process.cpuUsage() (user + system,
 * all threads) per 2xx for both, and their ratio. Rounds alternate baseline and click so that a
 * change in the machine's load falls on both; the median round is the figure.
 *
 * PostgreSQL runs in its own processes, so its CPU is not counted: this measures the Node side
 * (HTTP, validation, hooks, serialization, logging, batching, the pg driver).
 *
 * Knobs (all optional): DATABASE_URL (admin connection, default the local postgres), BENCH_ROUNDS
 * (default 3), BENCH_DURATION (s per measured run, default 5), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 50), BENCH_CPU_PROF (a directory: the measured click runs are profiled
 * with the inspector and written there as click-<time>.cpuprofile), BENCH_COMPARE (the root of
 * another checkout of this project, e.g. `git archive HEAD | tar -x -C /tmp/head` with a
 * node_modules link: its service is measured in the same rounds, for a before/after on one machine
 * state).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { openDatabase, sql, type Database, type NamedQuery } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { buildApp, type AppDeps } from '../ingest/app.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { memoryRateLimitStore, type RateLimitStore } from '../ingest/http/rate-limit.js';
import { createBenchDatabase, databaseUrl, DEFAULT_ADMIN_URL, dropBenchDatabase, intSetting, seedProgram } from './setup.js';
import { findWrk, fixedBodySpec, runWrk, type RequestSpec } from './wrk.js';
import { loadText, log } from './output.js';

const settings = {
  adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
  rounds: intSetting('BENCH_ROUNDS', 3, 1, 20),
  duration: intSetting('BENCH_DURATION', 5, 1, 60),
  warmup: intSetting('BENCH_WARMUP', 2, 0, 30),
  connections: intSetting('BENCH_CONNECTIONS', 50, 1, 500),
  cpuProfDir: process.env.BENCH_CPU_PROF || undefined,
  compareRoot: process.env.BENCH_COMPARE || undefined,
};

const WRK = findWrk();
if (!WRK) {
  process.stderr.write('wrk not found: apt-get install wrk\n');
  process.exit(2);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

interface Run {
  ok: number;
  cpuMicros: number;
  rps: number;
  p99Ms: number;
  ids: string[];
}

let ipCounter = 0;
let runNumber = 0;

async function drive(url: string, spec: RequestSpec, duration: number, dir: string): Promise<Run> {
  const ipBase = ipCounter;
  const before = process.cpuUsage();
  const result = await runWrk({
    wrk: WRK!,
    baseUrl: url,
    threads: 1,
    connections: settings.connections,
    duration,
    timeout: 10,
    ipBase,
    dir,
    name: `cpu-${++runNumber}`,
    spec,
  });
  const used = process.cpuUsage(before);
  ipCounter = ipBase + Math.max(0, ...result.threads.map((t) => t.sent));
  const ok = result.threads.reduce((n, t) => n + t.ok, 0);
  const unreadable = result.threads.reduce((n, t) => n + t.unreadable, 0);
  if (ok !== result.requests || unreadable > 0) {
    throw new Error(`${spec.path}: ${result.requests} answers, ${ok} 2xx, ${unreadable} unreadable: ${JSON.stringify(result.statuses)}`);
  }
  return { ok, cpuMicros: used.user + used.system, rps: result.requests / (result.durationUs / 1e6), p99Ms: result.latencyUs.p99 / 1000, ids: result.ids };
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no address');
  return `http://127.0.0.1:${address.port}`;
}

const countAcked = sql('bench.count_clicks_among', `SELECT count(*)::int AS n FROM clicks WHERE click_id = ANY ($1::text[])`);

interface Side {
  label: string;
  url: string;
  spec: RequestSpec;
  /** µs of CPU per request, one figure a round. */
  perRequest: number[];
}

/**
 * What bench/ingest.ts starts, in this process: the service as main.ts builds it (log level warn,
 * proxy trusted so each request has its own client IP), the bare baseline of
 * bench/baseline-server.ts and, with BENCH_COMPARE, the other checkout's service. Statements per
 * click say how well the writer batches at this load (a statement's cost is shared by its clicks).
 */
async function startSides(db: Database, affCode: string, apps: FastifyInstance[], statements: { count: number }): Promise<Side[]> {
  const countedDb: Database = Object.assign(Object.create(db) as Database, {
    many: <R>(query: NamedQuery, params?: readonly unknown[]) => {
      statements.count += 1;
      return db.many<R>(query, params);
    },
  });
  const serviceDeps = (rateLimits: RateLimitStore): AppDeps => ({
    db: countedDb,
    rateLimits,
    logger: createLogger('warn'),
    trustProxy: ['127.0.0.1'],
    tracking: { platformFeeBps: 2_000, docsBaseUrl: 'https://docs.bench.example' },
  });
  const baseline = Fastify({ logger: false, trustProxy: ['127.0.0.1'] });
  baseline.post('/baseline', async () => ({ success: true }));
  apps.push(baseline);
  const service = await buildApp(serviceDeps(memoryRateLimitStore()));
  apps.push(service);
  let compareUrl: string | undefined;
  if (settings.compareRoot) {
    const root = resolve(settings.compareRoot);
    const other = (await import(pathToFileURL(join(root, 'ingest/app.ts')).href)) as { buildApp: typeof buildApp };
    const otherLimits = (await import(pathToFileURL(join(root, 'ingest/http/rate-limit.ts')).href)) as { memoryRateLimitStore: typeof memoryRateLimitStore };
    const compared = await other.buildApp(serviceDeps(otherLimits.memoryRateLimitStore()));
    apps.push(compared);
    compareUrl = await listen(compared);
  }
  const baselineUrl = await listen(baseline);
  const serviceUrl = await listen(service);

  const body = JSON.stringify({ affiliate_url: `https://shop.bench.example/?aff=${affCode}` });
  const clickSpec = fixedBodySpec('/api/v1/track/click', body, '"click_id":"([^"]+)"', true);
  return [
    { label: 'baseline', url: baselineUrl, spec: fixedBodySpec('/baseline', body, '"success":(true)', false), perRequest: [] },
    ...(compareUrl ? [{ label: 'compared', url: compareUrl, spec: clickSpec, perRequest: [] }] : []),
    { label: 'click', url: serviceUrl, spec: clickSpec, perRequest: [] },
  ];
}

/** The measured rounds, each side in turn; the acknowledged click ids. */
async function runRounds(sides: Side[], dir: string, statements: { count: number }, profiler: Session | undefined): Promise<string[]> {
  const acked: string[] = [];
  log(`round  ${sides.map((side) => (side.label === 'baseline' ? `baseline µs/req (req/s, p99 ms)`.padStart(30) : `${side.label} µs/req (req/s, p99 ms, clicks/stmt)`.padStart(42))).join('')}`);
  for (let round = 1; round <= settings.rounds; round++) {
    const cells: string[] = [];
    for (const side of sides) {
      const profiled = profiler && side.label === 'click';
      if (profiled) await profiler!.post('Profiler.start');
      const statementsBefore = statements.count;
      const run = await drive(side.url, side.spec, settings.duration, dir);
      const clicksPerStatement = side.label === 'baseline' ? '' : `, ${(run.ok / Math.max(1, statements.count - statementsBefore)).toFixed(1)}/stmt`;
      if (profiled) {
        const { profile } = await profiler!.post('Profiler.stop');
        await mkdir(settings.cpuProfDir!, { recursive: true });
        await writeFile(join(settings.cpuProfDir!, `click-${Date.now()}.cpuprofile`), JSON.stringify(profile));
      }
      for (const id of run.ids) acked.push(id); // not a spread: a long run has more ids than the stack holds arguments
      const per = run.cpuMicros / run.ok;
      side.perRequest.push(per);
      cells.push(`${per.toFixed(1)} (${run.rps.toFixed(0)}, ${run.p99Ms.toFixed(1)}${clicksPerStatement})`.padStart(side.label === 'baseline' ? 30 : 42));
    }
    log(`${String(round).padStart(5)}  ${cells.join('')}`);
  }
  const medians = Object.fromEntries(sides.map((side) => [side.label, median(side.perRequest)]));
  const base = medians.baseline!;
  log(`median µs CPU per request: ${sides.map((side) => `${side.label} ${medians[side.label]!.toFixed(1)} (${(medians[side.label]! / base).toFixed(2)}x baseline)`).join(', ')}` +
    ` (load average ${loadText()})`);
  return acked;
}

async function main() {
  const dbName = `ats_bench_${randomBytes(6).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), 'ats-bench-cpu-'));
  let db: Database | undefined;
  const apps: FastifyInstance[] = [];
  let profiler: Session | undefined;
  try {
    await createBenchDatabase(settings.adminUrl, dbName);
    db = await openDatabase({ kind: 'postgres', url: databaseUrl(settings.adminUrl, dbName), poolSize: 20 });
    await migrate(db);
    const workspaceId = await createWorkspace(db, 'Bench workspace');
    await addMember(db, workspaceId, 'owner@bench.example', 'owner', 'Bench owner');
    const program = await seedProgram(db, workspaceId, 'main');
    const statements = { count: 0 };
    const sides = await startSides(db, program.affCode, apps, statements);

    log(`click CPU benchmark: node ${process.version}, ${settings.rounds} rounds of ${settings.duration} s per side, ` +
      `${settings.connections} connections, wrk -t1; load average ${loadText()}`);
    if (settings.compareRoot) log(`compared: the service of ${settings.compareRoot}; click: this checkout's`);
    if (settings.warmup > 0) for (const side of sides) await drive(side.url, side.spec, settings.warmup, dir);

    if (settings.cpuProfDir) {
      profiler = new Session();
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 250 });
    }
    const acked = await runRounds(sides, dir, statements, profiler);
    const found = (await db.one<{ n: number }>(countAcked, [acked]))!.n;
    log(`acknowledged clicks in the measured runs: ${acked.length}, committed: ${found}${found === acked.length ? '' : '  <- MISSING CLICKS'}`);
    return found === acked.length ? 0 : 1;
  } finally {
    profiler?.disconnect();
    for (const app of apps) await app.close();
    await db?.close();
    await dropBenchDatabase(settings.adminUrl, dbName).catch((e: unknown) => log(`could not drop ${dbName}: ${String(e)}`));
    await rm(dir, { recursive: true, force: true });
  }
}

process.exit(await main());
