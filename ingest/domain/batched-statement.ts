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
 * `run` runs a batch in one statement and answers each item in order; if it throws, the whole
 * batch failed and every item is rejected with that error.
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
      for (const p of batch) p.reject(error);
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
