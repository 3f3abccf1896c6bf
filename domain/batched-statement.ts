/**
 * One statement for many requests, on the hottest paths (docs/architecture.md, "Rules that exist
 * only for speed"): items that arrive while earlier statements run go together in the next one,
 * so a burst costs one round trip (and, for writes, one commit: group commit) per batch instead of
 * per item. No item is answered before its statement has finished (a write's has committed), so an
 * acknowledged write is never lost; under light load a batch is a single item and waits for nothing.
 */
export interface BatchedStatementOptions {
  maxBatch: number;
  /** Statements in flight at once; more arrivals wait and join the next batch. */
  maxInFlight: number;
}

/** One item's result from a batch: its value, or the error that refuses or fails it alone. */
export type ItemResult<O> = { ok: true; value: O } | { ok: false; error: unknown };

/**
 * SQLSTATE classes of errors a statement raises itself, which roll it back whole and which one
 * item can cause (a value the statement cannot take, a constraint, a deadlock, a raise, a limit):
 * data exception, integrity constraint, transaction rollback, syntax or access rule, program limit,
 * PL/pgSQL raise. Any other failure (the connection, the server) says nothing of whether the
 * statement committed, so its items are not written again.
 */
const ITEM_CAUSED = new Set(['22', '23', '40', '42', '54', 'P0']);

const itemCaused = (error: unknown) => {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.length === 5 && ITEM_CAUSED.has(code.slice(0, 2));
};

/**
 * `run` runs a batch in one statement and answers each item in order. If it throws an error the
 * statement raised itself (one item may be the cause, and nothing of the batch committed), each
 * item is run again alone, one after the other, so only the items that fail alone fail (issue 27);
 * any other error rejects every item of the batch.
 */
export function createBatchedStatement<I, O>(
  run: (batch: I[]) => Promise<ItemResult<O>[]>,
  options: BatchedStatementOptions,
): (item: I) => Promise<O> {
  const queue: { item: I; resolve(value: O): void; reject(error: unknown): void }[] = [];
  let inFlight = 0;

  async function flush(batch: typeof queue) {
    try {
      const results = await run(batch.map((p) => p.item));
      batch.forEach((p, i) => {
        const result = results[i] ?? { ok: false, error: new Error('the batch statement answered fewer items than it was given') };
        if (result.ok) p.resolve(result.value);
        else p.reject(result.error);
      });
    } catch (error) {
      if (batch.length > 1 && itemCaused(error)) {
        for (const p of batch) await flush([p]);
      } else {
        for (const p of batch) p.reject(error);
      }
    }
  }

  function pump() {
    while (inFlight < options.maxInFlight && queue.length > 0) {
      inFlight += 1;
      void flush(queue.splice(0, options.maxBatch)).finally(() => {
        inFlight -= 1;
        pump();
      });
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      // Let the items parsed in this turn of the event loop join the same batch.
      if (queue.length === 1) setImmediate(pump);
    });
}
