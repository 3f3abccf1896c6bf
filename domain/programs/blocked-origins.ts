import { sql, type Database } from '../../core/db.js';

/** At most this many origins are kept per program: a flood of made-up Origin headers cannot grow the table. */
const MAX_PER_PROGRAM = 50;
/** A program and origin is written at most once a minute per process; the count says how many were refused meanwhile. */
const WRITE_EVERY_MS = 60_000;
/** The recorder's memory of what it wrote lately; past it, the oldest are forgotten (one more write each). */
const REMEMBERED = 10_000;

const q = {
  record: sql(
    'blocked_origins.record',
    `INSERT INTO blocked_origins (program_id, origin, attempts)
     SELECT $1, $2, $3 WHERE (SELECT count(*) FROM blocked_origins WHERE program_id = $1) < $4
     ON CONFLICT (program_id, origin) DO UPDATE
       SET attempts = blocked_origins.attempts + EXCLUDED.attempts, last_seen_at = now()
     RETURNING 1`,
  ),
  // Only origins still not allowed: one added since is no longer a problem to show.
  list: sql(
    'blocked_origins.of_program',
    `SELECT b.origin, b.attempts, b.first_seen_at, b.last_seen_at
       FROM blocked_origins b JOIN programs p ON p.id = b.program_id
      WHERE b.program_id = $1 AND NOT (b.origin = ANY (p.allowed_origins))
      ORDER BY b.last_seen_at DESC, b.origin LIMIT $2`,
  ),
};

export interface BlockedOrigin {
  origin: string;
  attempts: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

/** The origins whose clicks the program refused, newest first, that are still not allowed. */
export const blockedOrigins = (db: Database, programId: number, limit = 10) => db.many<BlockedOrigin>(q.list, [programId, limit]);

export interface BlockedOriginRecorder {
  /** Notes a click refused for its origin; never delays or fails the click (written later, errors logged). */
  note(programId: number, origin: string): void;
}

/**
 * Notes clicks refused for their origin, outside the click's own statement (the click path's
 * statement stays as fast as before): the first refusal of a program and origin is written at
 * once, later ones are counted in memory and added by the next write a minute on.
 */
export function createBlockedOriginRecorder(db: Database, onError: (error: unknown) => void, now: () => number = Date.now): BlockedOriginRecorder {
  const seen = new Map<string, { writtenAt: number; pending: number }>();
  // Programs whose list was full at the last write: each made-up origin would be one more statement
  // that writes nothing, so none is sent for a while.
  const fullUntil = new Map<number, number>();
  const write = (programId: number, origin: string, attempts: number) => {
    db.many(q.record, [programId, origin.slice(0, 300), attempts, MAX_PER_PROGRAM]).then((rows) => {
      if (rows.length > 0) return;
      if (fullUntil.size >= REMEMBERED) fullUntil.clear();
      fullUntil.set(programId, now() + WRITE_EVERY_MS);
    }, onError);
  };
  return {
    note(programId, origin) {
      const key = `${programId} ${origin}`;
      const at = now();
      if ((fullUntil.get(programId) ?? 0) > at) return;
      const entry = seen.get(key);
      if (entry && at - entry.writtenAt < WRITE_EVERY_MS) {
        entry.pending += 1;
        return;
      }
      const attempts = 1 + (entry?.pending ?? 0);
      seen.delete(key);
      seen.set(key, { writtenAt: at, pending: 0 });
      if (seen.size > REMEMBERED) seen.delete(seen.keys().next().value!);
      write(programId, origin, attempts);
    },
  };
}
