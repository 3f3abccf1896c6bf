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
 *
 * This file runs the steps in order; bench/ingest/ holds them: settings.ts (knobs), services.ts
 * (the two processes), driver.ts and phases.ts (wrk runs and the phases made of them), clicks.ts
 * and writes.ts (the load phases), postgres-stats.ts (WAL and backend CPU), durability.ts (the
 * checks), targets.ts (targets, limits, the click ceiling), report.ts and lifecycle.ts (cleanup).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import fastifyPackage from 'fastify/package.json' with { type: 'json' };
import { openDatabase, sql } from '../core/db.js';
import { migrate } from '../core/migrate.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { runClickPhases } from './ingest/clicks.js';
import { createDriver } from './ingest/driver.js';
import { runBenchmark, type RunState } from './ingest/lifecycle.js';
import { createPhases } from './ingest/phases.js';
import { reportClickOnly, reportFullRun } from './ingest/report.js';
import { startServices } from './ingest/services.js';
import { readSettings, REQUEST_TIMEOUT_S, wrkOrExit } from './ingest/settings.js';
import { runWritePhases } from './ingest/writes.js';
import { loadText, log } from './output.js';
import { createBenchDatabase, databaseUrl, seedProgram } from './setup.js';
import { wrkVersion } from './wrk.js';

const settings = readSettings();
const WRK = wrkOrExit();

/** A fresh, migrated database with one program (a key, a partner and a referral link). */
async function prepareDatabase(state: RunState) {
  const dbName = `ats_bench_${randomBytes(6).toString('hex')}`;
  await createBenchDatabase(settings.adminUrl, dbName);
  state.dbName = dbName;
  const dbUrl = databaseUrl(settings.adminUrl, dbName);
  const db = await openDatabase({ kind: 'postgres', url: dbUrl, poolSize: 8 });
  state.db = db;
  await migrate(db);
  const pgVersion = (await db.one<{ v: string }>(sql('bench.version', `SELECT current_setting('server_version') AS v`)))!.v;
  log(`database ${dbName} created and migrated (PostgreSQL ${pgVersion})`);

  const workspaceId = await createWorkspace(db, 'Bench workspace');
  await addMember(db, workspaceId, 'owner@bench.example', 'owner', 'Bench owner');
  const mainProgram = await seedProgram(db, workspaceId, 'main');
  log(`seeded program ${mainProgram.programId} (aff code ${mainProgram.affCode})`);
  return { db, dbUrl, workspaceId, mainProgram };
}

async function main(state: RunState): Promise<number> {
  const started = Date.now();
  log(`ingest benchmark: node ${process.version}, fastify ${fastifyPackage.version}, ${availableParallelism()} CPUs, ` +
    `${settings.connections} connections, ${settings.warmup} s warm-up + ${settings.duration} s per phase, no pipelining`);
  log(`load generator: ${wrkVersion(WRK)} (${WRK}), -t${settings.threads} -c${settings.connections} --timeout ${REQUEST_TIMEOUT_S}s; ` +
    `p50/p99 from wrk's latency histogram; 2xx counted and ids read per response by the Lua script`);
  log(`load average before start: ${loadText()} (service, PostgreSQL and wrk share these CPUs)`);
  state.tmpDir = await mkdtemp(join(tmpdir(), 'ats-bench-wrk-'));
  const { db, dbUrl, workspaceId, mainProgram } = await prepareDatabase(state);
  const services = await startServices(settings, dbUrl, (child) => state.children.push(child));

  const driver = createDriver({ wrk: WRK, threads: settings.threads, connections: settings.connections, dir: state.tmpDir });
  const phases = createPhases(driver, settings);
  const clicks = await runClickPhases({ settings, driver, phases, db, services, affCode: mainProgram.affCode });
  if (settings.phases === 'click') {
    reportClickOnly(clicks);
    return clicks.durability.durable ? 0 : 1;
  }
  const writes = await runWritePhases(
    { settings, driver, phases, db, workspaceId, serviceUrl: services.serviceUrl, servicePid: services.service.proc.pid },
    clicks.click.measured.rps,
  );
  reportFullRun({ settings, clicks, writes, ipsAllocated: driver.ipsAllocated, service: services.service, started });
  return clicks.durability.durable && writes.sales.durable && writes.leads.durable && writes.refunds.durable ? 0 : 1;
}

await runBenchmark(settings.adminUrl, main);
