/**
 * Everything a pipeline run creates (child processes, the database and the relay gate's
 * connection, Kafka topics and groups, the warehouses' directories) is registered as soon as it
 * exists, and removed at the end whatever happened: a failure, a signal or the watchdog.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../../core/config.js';
import type { Database } from '../../core/db.js';
import type { BenchClickHouse } from '../clickhouse-server.js';
import { log } from '../output.js';
import { stopChild, type Child } from '../processes.js';
import { dropBenchDatabase, withTimeout } from '../setup.js';
import type { BrokerAdmin } from './kafka.js';
import type { PipelineSettings } from './settings.js';

const WATCHDOG_MS = 30 * 60_000;

/** The run's resources, for cleanup; `prefix` starts the name of everything it creates. */
export interface PipelineRun {
  id: string;
  /** ats_bench_<id>_: topics and consumer groups; the database is ats_bench_<id>. */
  prefix: string;
  children: Child[];
  db: Database | undefined;
  dbName: string | undefined;
  gate: pg.Client | undefined;
  admin: BrokerAdmin | undefined;
  groups: string[];
  tmpDir: string | undefined;
  /** The ClickHouse server the HTTP runs load into (one started here is stopped at the end). */
  clickhouse: BenchClickHouse | undefined;
}

/** What the steps of a run share once the database and the broker are up. */
export interface Bench {
  settings: PipelineSettings;
  /** The service's settings the relay and loader children run with. */
  config: Config;
  run: PipelineRun & { dbName: string; admin: BrokerAdmin; tmpDir: string };
  db: Database;
  /** For the in-process Kafka clients (baseline, breakdown). */
  logger: Logger;
}

function cleanupOf(run: PipelineRun, adminUrl: string): () => Promise<void> {
  let cleaning: Promise<void> | undefined;
  return () => {
    cleaning ??= (async () => {
      await Promise.all(run.children.map((child) => stopChild(child).catch(() => undefined)));
      await run.gate?.end().catch(() => undefined);
      if (run.admin) {
        try {
          const topics = await withTimeout(run.admin.dropRun(run.prefix, run.groups), 60_000, 'deleting topics');
          log(`deleted ${topics.length} topics and ${run.groups.length} consumer groups ${run.prefix}*`);
        } catch (error) {
          log(`could not delete topics ${run.prefix}*: ${String(error)}`);
        }
        await run.admin.close().catch(() => undefined);
      }
      if (run.db) await withTimeout(run.db.close(), 10_000, 'closing the bench pool').catch(() => undefined);
      if (run.dbName) {
        try {
          await dropBenchDatabase(adminUrl, run.dbName);
          log(`dropped database ${run.dbName}`);
        } catch (error) {
          log(`could not drop database ${run.dbName}: ${String(error)}`);
        }
      }
      // Its data is in the temporary directory: stopped first.
      if (run.clickhouse) await withTimeout(run.clickhouse.stop(), 60_000, 'stopping the ClickHouse server').catch(() => undefined);
      if (run.tmpDir) await rm(run.tmpDir, { recursive: true, force: true }).catch(() => undefined);
    })();
    return cleaning;
  };
}

/** Runs main, cleans up and exits with its code: 1 when it threw, 130 on a signal, 2 from the watchdog. */
export function runBenchmark(adminUrl: string, main: (run: PipelineRun) => Promise<number>): void {
  const id = randomBytes(5).toString('hex');
  const run: PipelineRun = {
    id,
    prefix: `ats_bench_${id}_`,
    children: [],
    db: undefined,
    dbName: undefined,
    gate: undefined,
    admin: undefined,
    groups: [],
    tmpDir: undefined,
    clickhouse: undefined,
  };
  const cleanup = cleanupOf(run, adminUrl);
  const onSignal = (signal: NodeJS.Signals) => {
    log(`\n${signal}: cleaning up`);
    void withTimeout(cleanup(), 90_000, 'cleanup')
      .catch(() => undefined)
      .finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const watchdog = setTimeout(() => {
    log(`watchdog: still running after ${WATCHDOG_MS / 60_000} min; cleaning up`);
    void cleanup().finally(() => process.exit(2));
  }, WATCHDOG_MS);
  watchdog.unref();

  main(run)
    .then(async (code) => {
      await cleanup();
      process.exit(code);
    })
    .catch(async (error: unknown) => {
      log(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      await cleanup();
      process.exit(1);
    });
}
