import type { EventLog, LogMessage } from './event-log.js';

export interface InProcessLog extends EventLog {
  /** Every message published to topic, in order, with its offset. */
  read(topic: string, fromOffset?: number): LogMessage[];
  topics(): string[];
}

/**
 * The embedded mode's event log: the same messages (Avro bytes) as Kafka, kept in memory per
 * topic in publish order. It is as durable as the process; the outbox stays the source of truth.
 */
export function createInProcessLog(): InProcessLog {
  const byTopic = new Map<string, LogMessage[]>();
  return {
    async publish(messages) {
      for (const m of messages) {
        const list = byTopic.get(m.topic) ?? [];
        list.push(m);
        byTopic.set(m.topic, list);
      }
    },
    read(topic, fromOffset = 0) {
      return (byTopic.get(topic) ?? []).slice(fromOffset);
    },
    topics() {
      return [...byTopic.keys()];
    },
    async close() {},
  };
}
