import type { EventLog, LogMessage } from '../event-log/event-log.js';
import type { Loader } from './loader.js';

export interface LoadingLogDeps {
  loader: Loader;
  /** Messages on this topic are dead letters (from the relay), reported rather than loaded. */
  deadLetterTopic: string;
  /** A message that cannot be loaded, with why: reported, not retried. */
  reportDeadLetter(topic: string, reason: string, value: Buffer): void;
}

/**
 * The embedded mode's event log: publishing is loading. A batch resolves only once the warehouse
 * acknowledged it, so the relay marks outbox rows only after they are in the warehouse; a failed
 * load rejects, the relay rolls back, and the rows are published again later. Nothing lives only
 * in memory, so a crash loses nothing.
 */
export function createLoadingLog(deps: LoadingLogDeps): EventLog {
  // Offsets name batches for the loader's insert tokens; the tokens also carry a hash of the
  // bytes, so offsets that start again at 0 after a restart cannot collide with other content.
  let nextOffset = 0;
  return {
    async publish(messages: LogMessage[]) {
      const byTopic = new Map<string, LogMessage[]>();
      for (const m of messages) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), m]);
      for (const [topic, list] of byTopic) {
        if (topic === deps.deadLetterTopic) {
          for (const m of list) deps.reportDeadLetter(topic, 'relay could not encode the outbox row', m.value);
          continue;
        }
        const first = nextOffset;
        nextOffset += list.length;
        const result = await deps.loader.load({
          topic,
          partition: 0,
          messages: list.map((m, i) => ({ offset: String(first + i), key: m.key, value: m.value })),
        });
        if (result.kind === 'retry') throw result.error;
        for (const d of result.deadLetters) deps.reportDeadLetter(d.topic, d.reason, d.message.value);
      }
    },
    async close() {},
  };
}
