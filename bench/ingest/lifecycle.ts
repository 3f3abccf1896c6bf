/**
 * Everything a run creates (child processes, the database, wrk's files) is registered as soon as it
 * exists, and removed at the end whatever happened: a failure, a signal or the watchdog.
 */
import { rm } from 'node:fs/promises';
import type { Database } from '../../core/db.js';
import { log } from '../output.js';
import { running, stopChild, type Child } from '../processes.js';
import { dropBenchDatabase, withTimeout } from '../setup.js';
import { killWrkRuns } from '../wrk.js';

/** Hard stop for the whole run; every step is bounded on its own, this is belt and braces. */
const WATCHDOG_MS = 5 * 60_000;

export interface RunState {
  children: Child[];
  db: Database | undefined;
  dbName: string | undefined;
  tmpDir: string | undefined;
}

function cleanupOf(state: RunState, adminUrl: string): () => Promise<void> {
  let cleaning: Promise<void> | undefined;
  return () => {
    cleaning ??= (async () => {
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
          await dropBenchDatabase(adminUrl, state.dbName);
          log(`dropped database ${state.dbName}`);
        } catch (error) {
          log(`could not drop database ${state.dbName}: ${String(error)}`);
        }
      }
      if (state.tmpDir) await rm(state.tmpDir, { recursive: true, force: true }).catch(() => {});
    })();
    return cleaning;
  };
}

/** Runs main, cleans up and exits with its code: 2 when it threw, 130 on a signal, 3 from the watchdog. */
export async function runBenchmark(adminUrl: string, main: (state: RunState) => Promise<number>): Promise<never> {
  const state: RunState = { children: [], db: undefined, dbName: undefined, tmpDir: undefined };
  const cleanup = cleanupOf(state, adminUrl);
  const onSignal = (signal: NodeJS.Signals) => {
    log(`\n${signal}: cleaning up`);
    void withTimeout(cleanup(), 30_000, 'cleanup')
      .catch(() => {})
      .finally(() => process.exit(130));
  };
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
    exitCode = await main(state);
  } catch (error) {
    log(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    for (const child of state.children) if (child.tail.length) log(`\n${child.name} output (last lines):\n${child.tail.join('\n')}`);
    exitCode = 2;
  }
  log('\ncleanup');
  await withTimeout(cleanup(), 60_000, 'cleanup').catch((e: unknown) => log(String(e)));
  process.exit(exitCode);
}
