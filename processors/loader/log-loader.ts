import type { LogMessage } from '../event-log/event-log.js';
import type { InProcessLog } from '../event-log/in-process-log.js';
import { deadLetterMessage } from './dead-letters.js';
import type { LoadResult, Loader, LoaderBatch } from './loader.js';

export interface LogLoaderDeps {
  log: InProcessLog;
  loader: Loader;
  topics: readonly string[];
  /** Where the reasons and bytes of messages that cannot be loaded go before their offset is committed. */
  deadLetterTopic: string;
  /** Rows per batch at most (thousands: one warehouse insert per table and batch). */
  maxBatchMessages?: number;
}

export type PollResult =
  | { kind: 'ok'; loaded: number; deadLettered: number; batches: number }
  | { kind: 'idle' }
  | { kind: 'retry'; error: unknown };

/**
 * The loaders' consumer behind the in-process log (embedded mode): per topic, reads from the
 * committed offset, cuts batches at multiples of maxBatchMessages (so a range read again is cut
 * the same way), loads each, publishes its dead letters, then commits. A failed batch is retried
 * from the same offset on the next poll. Offsets live in memory like the log itself.
 *
 * A kafkajs consumer does the same in eachBatch: batch.messages to LoaderBatch, load, on `ok`
 * publish dead letters, resolveOffset(last) and commitOffsetsIfNecessary(); on `retry` throw, so
 * the group redelivers from the committed offset.
 */
export function createLogLoader(deps: LogLoaderDeps) {
  const max = deps.maxBatchMessages ?? 5_000;
  const committed = new Map<string, number>();

  async function loadTopic(topic: string): Promise<PollResult> {
    let loaded = 0;
    let deadLettered = 0;
    let batches = 0;
    for (;;) {
      const from = committed.get(topic) ?? 0;
      const end = (Math.floor(from / max) + 1) * max;
      const messages = deps.log.read(topic, from).slice(0, end - from);
      if (messages.length === 0) break;
      const batch: LoaderBatch = {
        topic,
        partition: 0,
        messages: messages.map((m: LogMessage, i) => ({ offset: String(from + i), key: m.key, value: m.value })),
      };
      const result: LoadResult = await deps.loader.load(batch);
      if (result.kind === 'retry') return { kind: 'retry', error: result.error };
      if (result.deadLetters.length > 0) {
        await deps.log.publish(result.deadLetters.map((d) => deadLetterMessage(deps.deadLetterTopic, d)));
      }
      committed.set(topic, Number(result.nextOffset));
      loaded += result.loaded;
      deadLettered += result.deadLetters.length;
      batches += 1;
    }
    return batches === 0 ? { kind: 'idle' } : { kind: 'ok', loaded, deadLettered, batches };
  }

  /** Loads everything published since the last commit; what the embedded mode runs on its flush interval. */
  async function pollOnce(): Promise<PollResult> {
    let total: PollResult = { kind: 'idle' };
    for (const topic of deps.topics) {
      let result: PollResult;
      try {
        result = await loadTopic(topic);
      } catch (error) {
        result = { kind: 'retry', error };
      }
      if (result.kind === 'retry') return result;
      if (result.kind === 'ok') {
        total =
          total.kind === 'ok'
            ? { kind: 'ok', loaded: total.loaded + result.loaded, deadLettered: total.deadLettered + result.deadLettered, batches: total.batches + result.batches }
            : result;
      }
    }
    return total;
  }

  /** Runs pollOnce every intervalMs (the flush interval) until stop(). */
  function start(intervalMs: number, onResult: (result: PollResult) => void = () => {}) {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      onResult(await pollOnce());
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    timer = setTimeout(tick, intervalMs);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  return { pollOnce, start, committed: (topic: string) => committed.get(topic) ?? 0 };
}
