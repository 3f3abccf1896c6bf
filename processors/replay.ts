/**
 * Replay: rebuilds the warehouse from the outbox, which keeps every event ever emitted (rows are
 * marked relayed, never deleted). Reads the outbox in commit order (txid, id) page by page with
 * keyset pagination, encodes each row with the relay's codec, and loads each page as one batch
 * through the loader, so the rows land exactly as the pipeline would have put them there.
 *
 * A page is a deterministic batch: the same outbox rows give the same messages, the same batch
 * and so the same insert tokens. A replay run again, or resumed after an interruption, writes
 * nothing the warehouse already holds, and FINAL folds anything cut differently.
 */
import type { Logger } from 'pino';
import { sql, type Database } from '../core/db.js';
import type { Warehouse } from '../core/warehouse.js';
import type { AvroCodec } from './avro/codec.js';
import { createLoader, type BatchMessage, type Loader, type LoaderBatch } from './loader/loader.js';
import { WAREHOUSE_TABLES } from './loader/mappers.js';
import type { OutboxRow } from '../schemas/event-contract.js';

/** The batch "topic" of replay tokens: `outbox-replay/0/<first id>-<last id>/<hash>/<table>`, never a Kafka topic's. */
const REPLAY_SOURCE = 'outbox-replay';

/** A place in the outbox's commit order: the last row of the last page loaded. */
export interface ReplayCursor {
  /** xid8 as text (64-bit). */
  txid: string;
  id: number;
}

const START: ReplayCursor = { txid: '0', id: 0 };

export function formatCursor(cursor: ReplayCursor): string {
  return `${cursor.txid}:${cursor.id}`;
}

export function parseCursor(text: string): ReplayCursor {
  const m = /^(\d+):(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`A replay cursor is <txid>:<id>, as an interrupted replay prints it; got ${JSON.stringify(text)}`);
  return { txid: m[1]!, id: Number(m[2]) };
}

interface ReplayRow extends OutboxRow {
  cursor_txid: string;
}

const q = {
  /*
   * The replay's horizon: transactions below the snapshot's xmin have all committed or aborted,
   * so the set of rows below it is fixed. Rows above it are newer than the replay: the running
   * relay loads them (a row the relay already marked is always below its own, older, horizon).
   */
  horizon: sql('replay.horizon', `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`),
  counts: sql(
    'replay.counts',
    `SELECT count(*) AS total,
            count(*) FILTER (WHERE (txid, id) <= ($2::xid8, $3::bigint)) AS done
       FROM outbox
      WHERE txid < $1::xid8`,
  ),
  /*
   * Keyset pagination: each page starts after the last row of the previous one, never at an
   * OFFSET. The cursor's txid comes back as text (64 bits) under another name: ORDER BY txid
   * would otherwise sort by the output column, as text (1460 before 998), and skip rows.
   */
  page: sql(
    'replay.page',
    `SELECT id, txid::text AS cursor_txid, event_id, event_type, aggregate_key, program_id, test,
            to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
       FROM outbox
      WHERE txid < $1::xid8 AND (txid, id) > ($2::xid8, $3::bigint)
      ORDER BY txid, id
      LIMIT $4`,
  ),
};

const truncateTable = sql('replay.truncate', `TRUNCATE TABLE IF EXISTS {table:Identifier}`);

export interface ReplayDeadLetter {
  stage: 'relay.encode' | 'loader.decode' | 'loader.map';
  /** The outbox row's id. */
  outboxId: number;
  eventType: string | undefined;
  reason: string;
}

export interface ReplayProgress {
  /** Outbox events read below the horizon so far (resumed ones included). */
  done: number;
  total: number;
  batches: number;
  cursor: ReplayCursor;
}

export interface ReplaySummary extends ReplayProgress {
  /** Events the warehouse acknowledged in this run. */
  loaded: number;
  deadLettered: number;
  /** False when stopped by the signal: run again (from the start or from cursor) to finish. */
  complete: boolean;
}

export interface ReplayDeps {
  db: Database;
  warehouse: Warehouse;
  /** The relay's codec: encode (message) and the loader's decode. */
  codec: Pick<AvroCodec, 'message' | 'decode'>;
  /** Defaults to createLoader over the warehouse and the codec; a test or the metrics may wrap it. */
  loader?: Loader;
  /** Dead letters are logged here as errors (with reasons) when no onDeadLetter is given. */
  logger?: Logger;
  /** Outbox rows per page, and so per batch (one insert per table). */
  pageSize?: number;
  /** A batch the warehouse refuses is tried this many times before the replay stops with the cursor to resume from. */
  maxAttempts?: number;
  retryDelayMs?: number;
}

export interface ReplayOptions {
  /** Empties every warehouse table first. Whoever calls this has confirmed it. */
  truncate?: boolean;
  /** Resume after this cursor (an interrupted run's); pages are cut as in that run, so tokens match. */
  after?: ReplayCursor;
  /** Checked between batches: the batch in flight finishes, then the replay returns with complete: false. */
  signal?: AbortSignal;
  onStart?(progress: ReplayProgress): void;
  onProgress?(progress: ReplayProgress): void;
  onDeadLetter?(deadLetter: ReplayDeadLetter): void;
}

export class ReplayError extends Error {
  constructor(
    message: string,
    readonly cursor: ReplayCursor,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ReplayError';
  }
}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createReplay(deps: ReplayDeps) {
  const pageSize = deps.pageSize ?? 5_000;
  const maxAttempts = deps.maxAttempts ?? 5;
  const retryDelayMs = deps.retryDelayMs ?? 1_000;
  const loader = deps.loader ?? createLoader({ warehouse: deps.warehouse, decode: deps.codec.decode });

  /** Empties every table the loader fills; schema_migrations stays. TRUNCATE also clears a table's insert-token log. */
  async function truncate(): Promise<void> {
    for (const table of WAREHOUSE_TABLES) await deps.warehouse.command(truncateTable, { table });
  }

  function reportDeadLetter(options: ReplayOptions, d: ReplayDeadLetter) {
    if (options.onDeadLetter) options.onDeadLetter(d);
    else deps.logger?.error(d, 'replay: event dead-lettered');
  }

  async function loadBatch(batch: LoaderBatch, cursor: ReplayCursor) {
    for (let attempt = 1; ; attempt += 1) {
      const result = await loader.load(batch);
      if (result.kind === 'ok') return result;
      if (attempt >= maxAttempts) {
        throw new ReplayError(
          `The warehouse refused a replay batch ${attempt} times (${reasonOf(result.error)}); resume with the cursor ${formatCursor(cursor)}`,
          cursor,
          { cause: result.error },
        );
      }
      deps.logger?.warn({ err: result.error, attempt }, 'replay: warehouse refused the batch; retrying');
      await pause(retryDelayMs * attempt);
    }
  }

  async function run(options: ReplayOptions = {}): Promise<ReplaySummary> {
    if (options.truncate) await truncate();
    let cursor = options.after ?? START;
    const horizon = (await deps.db.one<{ horizon: string }>(q.horizon))!.horizon;
    const counts = await deps.db.one<{ total: number; done: number }>(q.counts, [horizon, cursor.txid, cursor.id]);
    const progress: ReplayProgress = { done: Number(counts?.done ?? 0), total: Number(counts?.total ?? 0), batches: 0, cursor };
    options.onStart?.({ ...progress });
    let loaded = 0;
    let deadLettered = 0;
    for (;;) {
      if (options.signal?.aborted) return { ...progress, cursor, loaded, deadLettered, complete: false };
      const rows = await deps.db.many<ReplayRow>(q.page, [horizon, cursor.txid, cursor.id, pageSize]);
      if (rows.length === 0) break;
      const messages: BatchMessage[] = [];
      const eventTypeOf = new Map<string, string>();
      for (const row of rows) {
        try {
          const message = deps.codec.message(row);
          // The outbox id is the offset: it names the row in the token and in any dead letter.
          messages.push({ offset: String(row.id), key: message.key, value: message.value });
          eventTypeOf.set(String(row.id), row.event_type);
        } catch (error) {
          deadLettered += 1;
          reportDeadLetter(options, { stage: 'relay.encode', outboxId: row.id, eventType: row.event_type, reason: reasonOf(error) });
        }
      }
      const last = rows[rows.length - 1]!;
      const next: ReplayCursor = { txid: last.cursor_txid, id: last.id };
      if (messages.length > 0) {
        const result = await loadBatch({ topic: REPLAY_SOURCE, partition: 0, messages }, cursor);
        loaded += result.loaded;
        deadLettered += result.deadLetters.length;
        for (const d of result.deadLetters) {
          reportDeadLetter(options, { stage: d.stage, outboxId: Number(d.offset), eventType: eventTypeOf.get(d.offset), reason: d.reason });
        }
      }
      cursor = next;
      progress.done += rows.length;
      progress.batches += 1;
      progress.cursor = cursor;
      options.onProgress?.({ ...progress });
    }
    return { ...progress, cursor, loaded, deadLettered, complete: true };
  }

  return { run, truncate };
}

// ---------------------------------------------------------------------------------------------
// Progress on stderr: a bar redrawn in place on a terminal, a line every few seconds otherwise.

/** 1234567 as "1,234,567", the same on every locale. */
export function formatCount(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Seconds as m:ss, or h:mm:ss from an hour; "--:--" when unknown (no rate yet). */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export interface ProgressFigures {
  done: number;
  total: number;
  /** Events per second (recent). */
  rate: number;
  elapsedSeconds: number;
}

/** Seconds left at the rate given; Infinity while the rate is unknown. */
export function etaSeconds(f: Pick<ProgressFigures, 'done' | 'total' | 'rate'>): number {
  const left = Math.max(0, f.total - f.done);
  if (left === 0) return 0;
  return f.rate > 0 ? left / f.rate : Infinity;
}

/**
 * `[#########...........]  45.0%  4,500/10,000 events  1,200 events/s  ETA 0:05`; when done, the
 * elapsed time replaces the ETA. Without a bar (log lines): the same figures.
 */
export function formatProgress(f: ProgressFigures, options: { bar?: boolean; width?: number; label?: string } = {}): string {
  const width = options.width ?? 24;
  const fraction = f.total > 0 ? Math.min(1, f.done / f.total) : 1;
  const filled = Math.floor(fraction * width);
  const percent = `${(fraction * 100).toFixed(1)}%`;
  const finished = f.done >= f.total;
  const time = finished ? `done in ${formatDuration(f.elapsedSeconds)}` : `ETA ${formatDuration(etaSeconds(f))}`;
  const parts = [
    percent.padStart(6),
    `${formatCount(f.done)}/${formatCount(f.total)} events`,
    `${formatCount(f.rate)} events/s`,
    time,
  ];
  const line = parts.join('  ');
  const label = options.label ? `${options.label} ` : '';
  return options.bar === false ? `${label}${line}` : `${label}[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${line}`;
}

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface ProgressReporterOptions {
  stream: ProgressStream;
  label?: string;
  /** ms clock; injectable for tests. */
  now?: () => number;
  /** Terminal: at most one redraw per this many ms. */
  redrawMs?: number;
  /** Not a terminal (a log file, CI): one line per this many ms. */
  logEveryMs?: number;
  /** The rate is measured over this last window, so the ETA follows the current speed. */
  rateWindowMs?: number;
}

export function createProgressReporter(options: ProgressReporterOptions) {
  const now = options.now ?? Date.now;
  const tty = options.stream.isTTY === true;
  const every = tty ? (options.redrawMs ?? 100) : (options.logEveryMs ?? 5_000);
  const windowMs = options.rateWindowMs ?? 10_000;
  const started = now();
  let startDone: number | undefined;
  let lastWrite = -Infinity;
  const samples: Array<[ms: number, done: number]> = [];

  function figures(done: number, total: number): ProgressFigures {
    const t = now();
    samples.push([t, done]);
    while (samples.length > 2 && samples[1]![0] <= t - windowMs) samples.shift();
    const [t0, d0] = samples[0]!;
    const rate = t > t0 ? ((done - d0) * 1000) / (t - t0) : 0;
    return { done, total, rate, elapsedSeconds: (t - started) / 1000 };
  }

  function write(f: ProgressFigures, final: boolean) {
    if (tty) options.stream.write(`\r\x1b[2K${formatProgress(f, { label: options.label })}${final ? '\n' : ''}`);
    else options.stream.write(`${formatProgress(f, { bar: false, label: options.label })}\n`);
  }

  return {
    /** Records progress; draws when the redraw (or log) interval has passed. */
    update(done: number, total: number) {
      // Rows resumed from a cursor were not loaded in this run: the rate counts from where it started.
      startDone ??= done;
      if (samples.length === 0) samples.push([started, startDone]);
      const f = figures(done, total);
      if (now() - lastWrite < every) return;
      lastWrite = now();
      write(f, false);
    },
    /** The last figures, always drawn; on a terminal it ends the line. */
    finish(done: number, total: number) {
      startDone ??= done;
      if (samples.length === 0) samples.push([started, startDone]);
      const t = now();
      const elapsed = (t - started) / 1000;
      write({ done, total, rate: elapsed > 0 ? (done - startDone) / elapsed : 0, elapsedSeconds: elapsed }, true);
    },
  };
}
