import { sql, type Database, type Queryable } from '../core/db.js';
import type { OutboxRow } from '../schemas/event-contract.js';
import type { EventLog, LogMessage } from './event-log/event-log.js';

export interface RelayDeps {
  db: Database;
  log: EventLog;
  /** Turns an outbox row into its message (topic, key, Avro bytes); throws for a row it cannot encode. */
  encode(row: OutboxRow): LogMessage;
  /** Where a row that cannot be encoded goes, with the reason, so the relay is never stuck on it. */
  deadLetterTopic: string;
  batchSize?: number;
}

export type RelayResult =
  | { kind: 'ok'; relayed: number; deadLettered: number }
  | { kind: 'idle' }
  | { kind: 'busy' } // another relay holds the lock
  | { kind: 'retry'; error: unknown };

const RELAY_LOCK = 727274002;

const q = {
  lock: sql('relay.lock', `SELECT pg_try_advisory_xact_lock(${RELAY_LOCK}) AS locked`),
  /*
   * Ids and txids are taken before commit and transactions commit out of order, so "id > last
   * seen" would skip a row whose transaction commits late. Rows are taken only from transactions
   * older than every transaction still running (the snapshot's xmin): no row can appear later
   * below that line. A long-running transaction holds the relay back; it never makes it skip.
   */
  pending: sql(
    'relay.pending',
    `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
       FROM outbox
      WHERE relayed_at IS NULL AND txid < pg_snapshot_xmin(pg_current_snapshot())
      ORDER BY txid, id
      LIMIT $1`,
  ),
  mark: sql('relay.mark', `UPDATE outbox SET relayed_at = now() WHERE id = ANY ($1::bigint[])`),
};

function deadLetter(topic: string, row: OutboxRow, error: unknown): LogMessage {
  const reason = error instanceof Error ? error.message : String(error);
  return { topic, key: row.aggregate_key, value: Buffer.from(JSON.stringify({ stage: 'relay.encode', reason, row })) };
}

/**
 * Publishes the outbox to the event log in commit order, one batch per transaction: publish,
 * then mark. A crash between the two publishes the batch again (the loaders are idempotent by
 * event id); a failed publish rolls back and the batch is retried.
 */
export function createRelay(deps: RelayDeps) {
  const batchSize = deps.batchSize ?? 1_000;

  async function publishAndMark(source: Queryable): Promise<RelayResult> {
    const rows = await source.many<OutboxRow>(q.pending, [batchSize]);
    if (rows.length === 0) return { kind: 'idle' };
    let deadLettered = 0;
    const messages = rows.map((row) => {
      try {
        return deps.encode(row);
      } catch (error) {
        deadLettered += 1;
        return deadLetter(deps.deadLetterTopic, row, error);
      }
    });
    await deps.log.publish(messages);
    await source.many(q.mark, [rows.map((r) => r.id)]);
    return { kind: 'ok', relayed: rows.length, deadLettered };
  }

  async function relayOnce(): Promise<RelayResult> {
    try {
      // PGlite is one process with one connection: there is no other relay to exclude, and a
      // transaction held across the publish would stall every ingest request meanwhile.
      if (deps.db.kind === 'pglite') return await publishAndMark(deps.db);
      return await deps.db.transaction(async (tx) => {
        const lock = await tx.one<{ locked: boolean }>(q.lock);
        if (!lock?.locked) return { kind: 'busy' } as const;
        return publishAndMark(tx);
      });
    } catch (error) {
      return { kind: 'retry', error };
    }
  }

  /** Relays until stopped: at once while there is a backlog, every intervalMs when idle or failing. */
  function start(options: { intervalMs?: number; onResult?: (result: RelayResult) => void } = {}) {
    const intervalMs = options.intervalMs ?? 200;
    let stopped = false;
    let wake: (() => void) | undefined;
    const loop = (async () => {
      while (!stopped) {
        const result = await relayOnce();
        options.onResult?.(result);
        if (result.kind === 'ok') continue;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, intervalMs).unref();
        });
      }
    })();
    return {
      /** Finishes the batch in flight, then stops. */
      async stop() {
        stopped = true;
        wake?.();
        await loop;
      },
    };
  }

  return { relayOnce, start };
}
