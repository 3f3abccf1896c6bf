/**
 * Rebuilds the warehouse from the outbox (every event ever emitted), for an operator recovering
 * from a lost or damaged warehouse.
 *
 *   npm run replay                               load every event into the warehouse (idempotent)
 *   npm run replay -- --truncate --yes           empty the warehouse tables first, then load
 *   npm run replay -- --resume-after <txid:id>   continue an interrupted replay
 *   npm run replay -- --page-size 5000           outbox rows per page and batch
 *
 * Progress goes to stderr (a bar on a terminal, a line every 5 s otherwise), the summary to
 * stdout as JSON. Ctrl-C finishes the batch in flight and prints the cursor to resume from.
 * Embedded mode: stop the service first (PGlite and chDB each admit one process per directory).
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig, type Config } from '../core/config.js';
import { openDatabase, type Database } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrateWarehouse } from '../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../core/warehouse.js';
import { createAvroCodec } from '../processors/avro/codec.js';
import { WAREHOUSE_TABLES } from '../processors/loader/mappers.js';
import { createProgressReporter, createReplay, formatCursor, parseCursor, ReplayError, type ReplayCursor } from '../processors/replay.js';

const usage = `usage: npm run replay -- [--truncate --yes] [--resume-after <txid:id>] [--page-size N]`;

interface ReplayOptions {
  truncate: boolean;
  after: ReplayCursor | undefined;
  pageSize: number;
}

/** The command line's options, or the exit code when there is nothing to replay (help, an unconfirmed truncate). */
function parseOptions(argv: string[]): ReplayOptions | number {
  const { values } = parseArgs({
    args: argv,
    options: {
      truncate: { type: 'boolean', default: false },
      yes: { type: 'boolean', default: false },
      'resume-after': { type: 'string' },
      'page-size': { type: 'string', default: '5000' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const pageSize = Number(values['page-size']);
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 100_000) throw new Error(`--page-size must be 1 to 100000\n${usage}`);
  const after = values['resume-after'] ? parseCursor(values['resume-after']) : undefined;
  if (values.truncate && after) throw new Error(`--truncate empties what a resumed replay builds on: use one or the other\n${usage}`);
  if (values.truncate && !values.yes) {
    console.error(`--truncate empties every warehouse table (${WAREHOUSE_TABLES.join(', ')}) before loading. Add --yes to confirm.`);
    return 2;
  }
  return { truncate: values.truncate, after, pageSize };
}

/**
 * The warehouse first: chDB locks its directory, so a running embedded service stops the replay
 * here, before it opens PGlite, which has no lock and must not be opened by two processes.
 */
async function openStores(config: Config): Promise<{ warehouse: Warehouse; db: Database }> {
  if (config.database.kind === 'pglite' && !existsSync(config.database.dataDir ?? '')) {
    throw new Error(`No embedded database at ${config.database.dataDir}: nothing to replay (set DATA_DIR or DATABASE_URL)`);
  }
  const warehouse = await openWarehouse(config.warehouse).catch((error: Error) => {
    if (!/Cannot lock file/.test(error.message)) throw error;
    throw new Error(`The warehouse directory is in use, most likely by the running service: stop it before replaying.\n${error.message}`);
  });
  const db = await openDatabase(config.database).catch(async (error: unknown) => {
    await warehouse.close();
    throw error;
  });
  return { warehouse, db };
}

/** Ctrl-C (or SIGTERM) finishes the batch in flight; a second one quits at once. */
function interruptOnSignals(): AbortSignal {
  const controller = new AbortController();
  const interrupt = () => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write('\nstopping after the batch in flight (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  return controller.signal;
}

/** Replays with a progress bar on stderr and the summary on stdout; the exit code. */
async function replayWithProgress(replay: ReturnType<typeof createReplay>, options: ReplayOptions, signal: AbortSignal): Promise<number> {
  // Started once the tables are emptied and the outbox counted, so the rate is the loading's.
  let progress: ReturnType<typeof createProgressReporter> | undefined;
  const started = Date.now();
  const summary = await replay.run({
    truncate: options.truncate,
    after: options.after,
    signal,
    onStart: (p) => {
      progress = createProgressReporter({ stream: process.stderr, label: 'replay' });
      progress.update(p.done, p.total);
    },
    onProgress: (p) => progress?.update(p.done, p.total),
  });
  progress?.finish(summary.done, summary.total);
  console.log(
    JSON.stringify({
      complete: summary.complete,
      events: summary.done,
      total: summary.total,
      loaded: summary.loaded,
      deadLettered: summary.deadLettered,
      batches: summary.batches,
      seconds: Number(((Date.now() - started) / 1000).toFixed(1)),
      cursor: formatCursor(summary.cursor),
    }),
  );
  if (!summary.complete) {
    console.error(`interrupted: run again with --resume-after ${formatCursor(summary.cursor)} (or from the start: no number changes)`);
    return 130;
  }
  if (summary.deadLettered > 0) console.error(`${summary.deadLettered} events could not be loaded; their reasons are logged above`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const options = parseOptions(argv);
  if (typeof options === 'number') return options;
  const config = loadConfig();
  // Logs (dead letters, retries) on stderr beside the progress; stdout carries only the summary.
  const logger = createLogger(config.logLevel, pino.destination(2));
  const { warehouse, db } = await openStores(config);
  const signal = interruptOnSignals();
  try {
    // A new warehouse has no tables yet.
    await migrateWarehouse(warehouse);
    const replay = createReplay({ db, warehouse, codec: createAvroCodec(), logger, pageSize: options.pageSize });
    return await replayWithProgress(replay, options, signal);
  } finally {
    await warehouse.close();
    await db.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    // A ReplayError names the cursor to resume from.
    console.error(`${error instanceof ReplayError ? '\n' : ''}${error.message}`);
    process.exit(1);
  },
);
