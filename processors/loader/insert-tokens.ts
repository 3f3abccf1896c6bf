/**
 * Insert tokens (ClickHouse's insert_deduplication_token): the same rows from the same range of the
 * log carry the same token, so a redelivered batch writes nothing.
 */
import { createHash } from 'node:crypto';

/** Consecutive messages of one topic partition (a LoaderBatch): their offsets and bytes make the tokens. */
export interface LogRange {
  topic: string;
  partition: number;
  messages: readonly { offset: string; value: Buffer }[];
}

/** One table's token in a load; extraHash names what else its rows depend on (a second part, looked-up sales). */
export type InsertToken = (table: string, extraHash?: string) => string;

const rangeOf = (batch: LogRange) => `${batch.topic}/${batch.partition}/${batch.messages[0]!.offset}-${batch.messages[batch.messages.length - 1]!.offset}`;

/**
 * The insert token of one table's rows from one batch: the batch's place in the log (topic,
 * partition, first and last offset) and a hash of its bytes, so the same range redelivered gives
 * the same token, and a range whose content differs (a recreated topic) never collides with it.
 */
function dedupToken(batch: LogRange, table: string, contentHash: string): string {
  return `${rangeOf(batch)}/${contentHash}/${table}`;
}

/** A hash of the batches' offsets and bytes: what makes a recreated topic's range another token. */
function contentHashOf(batches: readonly LogRange[]): string {
  const hash = createHash('sha256');
  // The offset and its NUL in one update: the same bytes hashed as in three, one call fewer per message.
  for (const batch of batches) for (const message of batch.messages) hash.update(`${message.offset}\0`).update(message.value);
  return hash.digest('hex').slice(0, 32);
}

/**
 * The tokens of a load: one batch's are dedupToken's; batches loaded together are named by the
 * hash of their ranges (such a combination recurs only by chance, so their redelivery is caught by
 * FINAL and the rollup's recompute rather than by the token).
 */
export function insertTokens(batches: readonly LogRange[]): InsertToken {
  const contentHash = contentHashOf(batches);
  const combined =
    batches.length === 1
      ? undefined
      : createHash('sha256')
          .update(batches.map(rangeOf).join('\n'))
          .digest('hex')
          .slice(0, 32);
  return (table, extraHash = '') => {
    const hash = extraHash ? `${contentHash}.${extraHash}` : contentHash;
    return combined === undefined ? dedupToken(batches[0]!, table, hash) : `combined/${combined}/${hash}/${table}`;
  };
}
