/**
 * Dead letters: a message the loader cannot decode or map is set aside with its reason and its
 * bytes, published to the dead-letter topic before its offset is committed, and the rest of its
 * batch loads.
 */
import type { LogMessage } from '../event-log/event-log.js';

export interface DeadLetter {
  topic: string;
  partition: number;
  offset: string;
  stage: 'loader.decode' | 'loader.map';
  reason: string;
  /** The message as its batch held it (a BatchMessage). */
  message: { offset: string; key?: string; value: Buffer };
}

/** A decode or map failure's words: what the log line and the dead-letter message carry. */
export const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The dead-letter topic's message for a dead letter: the reason and the original bytes (base64). */
export function deadLetterMessage(topic: string, d: DeadLetter): LogMessage {
  return {
    topic,
    key: d.message.key ?? `${d.topic}/${d.partition}/${d.offset}`,
    value: Buffer.from(
      JSON.stringify({
        stage: d.stage,
        reason: d.reason,
        source: { topic: d.topic, partition: d.partition, offset: d.offset },
        value_base64: d.message.value.toString('base64'),
      }),
    ),
  };
}
