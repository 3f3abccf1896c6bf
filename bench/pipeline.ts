/**
 * Pipeline benchmark (npm run bench:pipeline). Not a test: it reports throughput and freshness of
 * the distributed pipeline (outbox -> relay -> Kafka -> loader -> warehouse) and fails (exit 1)
 * only when an event or an acknowledged click is missing from the warehouse.
 *
 * Needs a real PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres) and
 * a real Kafka (KAFKA_BROKERS, default 127.0.0.1:9092; scripts/kafka-broker.sh start). The
 * warehouse is chDB in temporary directories, and a database per run on a ClickHouse server over
 * HTTP (BENCH_CLICKHOUSE_URL, or scripts/clickhouse-server.sh's server started here on a free port;
 * BENCH_WAREHOUSES=chdb,http picks). Every process is the production one: the relay is
 * `main.ts relay`, the loader `main.ts loader`, the service `main.ts ingest`, each a child process
 * whose CPU time is read from /proc. chDB binds one directory per process, so a run's warehouse is
 * read after its loader stopped, by bench/pipeline/warehouse-reader.ts in a child of its own (a
 * server's database is read from this process); timings come from the warehouse's `loaded_at`
 * (insert time) and the outbox's `relayed_at` (start of the relay's transaction), not from polling.
 *
 * 1. Throughput. A throw-away database ats_bench_<hex> gets real traffic over HTTP (buildApp +
 *    inject: clicks, leads, sales, refunds, so every event type), then its outbox is multiplied in
 *    SQL to BENCH_EVENTS events (each clone a distinct event_id; click clones a distinct click_id).
 *    - baseline: the same Avro messages produced (the relay's batch size, kafkajs event log) and
 *      consumed (kafkajs group, commit per batch) with nothing else: the broker's ceiling here;
 *    - relay alone, per client: outbox to Kafka, rate = rows marked per second;
 *    - loader alone (its consumer is kafkajs whatever KAFKA_CLIENT says): from full topics, per warehouse;
 *    - relay and loader together, per client into chDB and with the first client into the server:
 *      outbox to rows visible, end to end.
 *    The relay starts gated: the benchmark holds the relay's advisory lock until every process
 *    is up, so start-up costs are outside the figures.
 * 2. Breakdown: the relay and the loader once more, in this process, each step timed
 *    (bench/pipeline/breakdown.ts): Postgres vs encode vs publish, decode vs map vs chDB insert.
 * 3. Freshness, per client into chDB and with the first client into the server: ingest, relay and
 *    loader processes at their default settings; clicks over HTTP paced at BENCH_RATE per second
 *    for BENCH_SECONDS; for each acknowledged click, the time from its 200 to its row's loaded_at
 *    in the warehouse.
 *
 * Knobs (all optional): BENCH_EVENTS (default 200000), BENCH_RATE (default 1000), BENCH_SECONDS
 * (default 20), BENCH_CLIENTS (default kafkajs,platformatic), BENCH_PHASES (default
 * throughput,breakdown,freshness), BENCH_WAREHOUSES (default chdb,http), BENCH_CLICKHOUSE_URL (a
 * server of your own, default user), BENCH_CPU_PROF (a directory: relay and loader write CPU profiles there).
 * RELAY_BATCH_SIZE, RELAY_POLL_MS, LOADER_FLUSH_MS, LOADER_MIN_BATCH_BYTES are passed to the
 * children when set (else the service's defaults apply).
 *
 * This file runs the steps in order; bench/pipeline/ holds them: settings.ts (knobs), outbox.ts
 * (the events), services.ts (the children), drain.ts (the relay gate, the drain), kafka.ts (the
 * broker's baseline and admin), throughput.ts, breakdown.ts and freshness.ts (the three phases),
 * cpu.ts and figures.ts (what a run cost and reached), report.ts (summary, targets), lifecycle.ts (cleanup).
 */
import { mkdtemp } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { benchClickHouse } from './clickhouse-server.js';
import { fmtFinite as fmt, loadText, log } from './output.js';
import { runBreakdown } from './pipeline/breakdown.js';
import { runFreshness, type FreshnessRun } from './pipeline/freshness.js';
import { BrokerAdmin, type BaselineResult } from './pipeline/kafka.js';
import { runBenchmark, type Bench, type PipelineRun } from './pipeline/lifecycle.js';
import { fillOutbox, seedPrograms } from './pipeline/outbox.js';
import { reportSummary } from './pipeline/report.js';
import { childConfig, readSettings } from './pipeline/settings.js';
import { runThroughput, type ThroughputRun } from './pipeline/throughput.js';
import { createBenchDatabase, databaseUrl, withTimeout } from './setup.js';

const settings = readSettings();
const config = childConfig();
// kafkajs warns that an idempotent producer with limited retries may break exactly-once; the service logs that too.
const logger = createLogger('error');

/** The broker's admin, a fresh migrated database, a temporary directory: what every phase uses. */
async function prepare(run: PipelineRun): Promise<Bench> {
  const tmpDir = await mkdtemp(join(tmpdir(), 'ats-bench-pipeline-'));
  run.tmpDir = tmpDir;
  if (settings.warehouses.includes('http')) {
    run.clickhouse = await withTimeout(benchClickHouse(join(tmpDir, 'clickhouse')), 120_000, 'starting the ClickHouse server');
    log(`warehouses: chDB, and ${run.clickhouse.label} at ${run.clickhouse.url}`);
  }
  const admin = await withTimeout(BrokerAdmin.connect(settings.brokers), 30_000, `connecting to Kafka at ${settings.brokers.join(',')} (scripts/kafka-broker.sh start)`);
  run.admin = admin;
  const dbName = `ats_bench_${run.id}`;
  await createBenchDatabase(settings.adminUrl, dbName);
  run.dbName = dbName;
  const db = await openDatabase({ kind: 'postgres', url: databaseUrl(settings.adminUrl, dbName), poolSize: 4 });
  run.db = db;
  await migrate(db);
  // The same object: cleanup sees what the phases register on it (children, groups, the gate).
  return { settings, config, run: run as Bench['run'], db, logger };
}

async function main(run: PipelineRun): Promise<number> {
  const started = Date.now();
  log(`pipeline benchmark: node ${process.version}, ${availableParallelism()} CPUs, load average ${loadText()}`);
  log(`brokers ${settings.brokers.join(',')}, clients ${settings.clients.join(', ')}, ${fmt(settings.events)} events; ` +
    `relay batch ${config.relay.batchSize}, poll ${config.relay.pollIntervalMs} ms; ` +
    `loader flush ${config.loader.flushIntervalMs} ms, min batch ${fmt(config.loader.minBatchBytes)} bytes; ` +
    `${config.kafka?.topics.partitions ?? 3} partitions per topic`);
  const bench = await prepare(run);
  const programs = await seedPrograms(bench.db, run.id);
  log(`database ${bench.run.dbName} created, migrated and seeded (${programs.length} programs)`);

  let outbox = new Map<string, number>();
  if (settings.phases.includes('throughput') || settings.phases.includes('breakdown')) {
    outbox = await fillOutbox(bench.db, programs, settings.events, run.id);
  }
  let baseline: BaselineResult | undefined;
  let throughput: ThroughputRun[] = [];
  if (settings.phases.includes('throughput')) ({ baseline, runs: throughput } = await runThroughput(bench, outbox));
  if (settings.phases.includes('breakdown') && outbox.size) await runBreakdown(bench);
  let fresh: FreshnessRun[] = [];
  if (settings.phases.includes('freshness')) fresh = await runFreshness(bench, programs[0]!.affCode);

  const failed = throughput.some((r) => r.problems.length > 0) || fresh.some((r) => r.found !== r.acked);
  reportSummary({ settings, baseline, throughput, fresh, failed, started });
  return failed ? 1 : 0;
}

runBenchmark(settings.adminUrl, main);
