import type { FastifyBaseLogger, FastifyRequest } from 'fastify';

/** Writes (or leaves out) the warning for one refused request. */
export type RefusalLog = (request: FastifyRequest, fields: Record<string, unknown>, message: string) => void;

export interface ThrottledRefusalLog {
  log: RefusalLog;
  /** Writes the count of the current window's refusals left out (at close). */
  flush(): void;
}

export interface RefusalLogOptions {
  /** Where the counts of refusals left out are written. */
  log: FastifyBaseLogger;
  clock: () => number;
  /** What was refused, for the count's line: "processor webhook refusals". */
  what: string;
  windowMs?: number;
  /** Clients given a line of their own in a window; past them, refusals are only counted. */
  maxClients?: number;
}

/**
 * Refusals logged at most once per client address and window: the first refusal of an address
 * writes its warning, the rest are counted, and the first refusal of a later window (or the close)
 * writes one line with how many were left out. A flood of refused requests then costs a line a
 * minute per address (at most maxClients of them), not one per request.
 */
export function throttledRefusalLog({ log, clock, what, windowMs = 60_000, maxClients = 100 }: RefusalLogOptions): ThrottledRefusalLog {
  let windowStart = -1;
  /** Per address given its line this window: its refusals left out since. */
  let leftOut = new Map<string, number>();
  /** Refusals of addresses past maxClients this window. */
  let unlisted = 0;
  // A request refused once however many lines would report it (the route's own, the error handler's).
  const seen = new WeakSet<FastifyRequest>();

  function flush() {
    let suppressed = unlisted;
    for (const n of leftOut.values()) suppressed += n;
    if (suppressed > 0) {
      log.warn({ suppressed, clients: leftOut.size, window_start: new Date(windowStart).toISOString() }, `${what} left out of the log`);
    }
    leftOut = new Map();
    unlisted = 0;
  }

  return {
    log(request, fields, message) {
      if (seen.has(request)) return;
      seen.add(request);
      const start = Math.floor(clock() / windowMs) * windowMs;
      if (start !== windowStart) {
        flush();
        windowStart = start;
      }
      const client = request.clientAddress;
      const count = leftOut.get(client);
      if (count !== undefined) leftOut.set(client, count + 1);
      else if (leftOut.size >= maxClients) unlisted += 1;
      else {
        leftOut.set(client, 0);
        request.log.warn({ ...fields, client }, message);
      }
    },
    flush,
  };
}
