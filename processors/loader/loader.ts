/**
 * The loader: batches of log messages into the warehouse, idempotently. Each message is decoded
 * and mapped to its rows (mappers.ts); one that does not fit is a dead letter (dead-letters.ts);
 * the rows go in one insert per table, each with its insert token (insert-tokens.ts), then the
 * performance facts and the rollup (rollup.ts).
 */
import { TabSeparatedWriter, type Warehouse } from '../../core/warehouse.js';
import type { DecodedEvent } from '../../schemas/event-contract.js';
import { reasonOf, type DeadLetter } from './dead-letters.js';
import { insertTokens, type InsertToken } from './insert-tokens.js';
import { eventRows, EVENT_TABLES, STATE_TABLES, type Mapped } from './mappers.js';
import { collectFacts, FACTS, type Fact } from './rollup.js';

/** One message of a batch with its offset in its partition (kafkajs offsets are decimal strings). */
export interface BatchMessage {
  offset: string;
  key?: string;
  value: Buffer;
}

/**
 * Consecutive messages of one topic partition, as a kafkajs eachBatch or a read of the in-process
 * log gives them. The same range always carries the same messages, so its insert tokens are
 * deterministic.
 */
export interface LoaderBatch {
  topic: string;
  partition: number;
  messages: readonly BatchMessage[];
}

export type MessageResult =
  | { offset: string; outcome: 'ok'; eventType: string; eventId: string }
  | { offset: string; outcome: 'dead-letter'; reason: string }
  | { offset: string; outcome: 'retry' };

export type LoadResult =
  /** Every row is acknowledged by the warehouse: commit nextOffset (after publishing the dead letters). */
  | { kind: 'ok'; nextOffset: string; loaded: number; messages: MessageResult[]; deadLetters: DeadLetter[] }
  /** The warehouse refused or failed: commit nothing, load the same batch again (it is idempotent). */
  | { kind: 'retry'; error: unknown; messages: MessageResult[] };

export interface LoaderDeps {
  warehouse: Warehouse;
  /** Bytes to event; throws on bytes it cannot read (the Avro codec's decode). */
  decode(value: Buffer): DecodedEvent;
}

export interface Loader {
  load(batch: LoaderBatch): Promise<LoadResult>;
}

/** A loader that can also load several batches as one (the Kafka loader's batches of one fetch). */
export interface CombiningLoader extends Loader {
  loadMany(batches: readonly LoaderBatch[]): Promise<LoadResult[]>;
}

/** Messages mapped between two turns of the event loop while inserts run. */
const YIELD_EVERY = 500;

/** What became of one batch's messages, in order, and its dead letters. */
class BatchOutcome {
  readonly messages: MessageResult[] = [];
  readonly deadLetters: DeadLetter[] = [];

  constructor(private readonly batch: LoaderBatch) {}

  loaded(message: BatchMessage, event: DecodedEvent): void {
    this.messages.push({ offset: message.offset, outcome: 'ok', eventType: event.eventType, eventId: String(event.value.event_id) });
  }

  deadLettered(message: BatchMessage, stage: DeadLetter['stage'], reason: string): void {
    this.messages.push({ offset: message.offset, outcome: 'dead-letter', reason });
    this.deadLetters.push({ topic: this.batch.topic, partition: this.batch.partition, offset: message.offset, stage, reason, message });
  }

  /** The batch's result once every row is acknowledged. */
  result(): LoadResult {
    const { messages, deadLetters } = this;
    const last = this.batch.messages[this.batch.messages.length - 1]!;
    return { kind: 'ok', nextOffset: (BigInt(last.offset) + 1n).toString(), loaded: messages.filter((m) => m.outcome === 'ok').length, messages, deadLetters };
  }
}

/**
 * The rows of one load, encoded per table as they are mapped (only for speed: bytes, not objects
 * kept until the inserts, TabSeparatedWriter), and their inserts in order: each topic's event
 * tables as soon as it is mapped, so that chDB writes them on its threads while this one maps the
 * next topic; the current state once every event table is acknowledged (a reader never sees state
 * without its event); then the performance facts and the rollup.
 */
class TableInserts {
  private readonly writers = new Map<string, TabSeparatedWriter>();
  private readonly facts = collectFacts();
  private readonly eventInserts: Promise<void>[] = [];
  private readonly parts = new Map<string, number>();

  constructor(
    private readonly warehouse: Warehouse,
    private readonly token: InsertToken,
  ) {}

  /** Event tables are being written: mapping yields now and then to let their completions run. */
  get inserting(): boolean {
    return this.eventInserts.length > 0;
  }

  add(rows: Mapped): void {
    for (const [table, row] of rows) {
      if (table === FACTS) {
        this.facts.add(row as Fact);
        continue;
      }
      let writer = this.writers.get(table);
      if (!writer) this.writers.set(table, (writer = new TabSeparatedWriter()));
      writer.add(writer.encode(row));
    }
  }

  /** Hands the event tables' rows mapped so far to the warehouse, without waiting. */
  insertEvents(): void {
    for (const table of EVENT_TABLES) {
      const writer = this.writers.get(table);
      if (!writer?.count) continue;
      this.writers.delete(table);
      const part = (this.parts.get(table) ?? 0) + 1;
      this.parts.set(table, part);
      // Events of one table come on one topic; should they come on two, the second part has its own token.
      const inserted = this.warehouse.insert(table, writer.finish(), { dedupToken: this.token(table, part === 1 ? '' : `part${part}`) });
      inserted.catch(() => undefined);
      this.eventInserts.push(inserted);
    }
  }

  /** Once every event table is acknowledged: the current state, then the facts and the rollup. */
  async finish(): Promise<void> {
    const failed = (await Promise.allSettled(this.eventInserts)).find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    for (const table of STATE_TABLES) {
      const writer = this.writers.get(table);
      if (writer) await this.warehouse.insert(table, writer.finish(), { dedupToken: this.token(table) });
    }
    await this.facts.write(this.warehouse, this.token);
  }

  /** After a failure: the inserts in flight end before the load is tried again. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.eventInserts);
  }
}

/** Decodes and maps one message into the load's rows; one that does not fit is a dead letter with its reason. */
function mapMessage(decode: LoaderDeps['decode'], message: BatchMessage, outcome: BatchOutcome, inserts: TableInserts): void {
  let event: DecodedEvent;
  try {
    event = decode(message.value);
  } catch (error) {
    outcome.deadLettered(message, 'loader.decode', `undecodable: ${reasonOf(error)}`);
    return;
  }
  let rows: Mapped;
  try {
    rows = eventRows(event);
  } catch (error) {
    outcome.deadLettered(message, 'loader.map', `unmappable ${event.eventType} event: ${reasonOf(error)}`);
    return;
  }
  inserts.add(rows);
  outcome.loaded(message, event);
}

/**
 * The batches' indexes by topic, each topic's in their order, the topic with the most messages
 * first (then by name): the same batches always give the same order, so the same parts and tokens.
 */
function byTopic(batches: readonly LoaderBatch[]): number[][] {
  const topics = new Map<string, { size: number; indexes: number[] }>();
  batches.forEach((batch, i) => {
    const topic = topics.get(batch.topic) ?? { size: 0, indexes: [] };
    topic.size += batch.messages.length;
    topic.indexes.push(i);
    topics.set(batch.topic, topic);
  });
  return [...topics]
    .sort(([a, x], [b, y]) => y.size - x.size || (a < b ? -1 : a > b ? 1 : 0))
    .map(([, topic]) => topic.indexes);
}

const retryAll = (batches: readonly LoaderBatch[], error: unknown): LoadResult[] =>
  batches.map((batch) => ({ kind: 'retry', error, messages: batch.messages.map((m) => ({ offset: m.offset, outcome: 'retry' as const })) }));

/**
 * Loads batches of log messages into the warehouse. Never throws: a message that does not decode
 * or map is a dead letter (with its reason) and the rest of the batch loads; a warehouse failure
 * is a retry of the whole batch. The caller commits nextOffset only after an `ok`.
 */
export function createLoader(deps: LoaderDeps): CombiningLoader {
  /** Maps one batch's messages into the load's rows, yielding now and then while inserts run. */
  async function mapBatch(batch: LoaderBatch, outcome: BatchOutcome, inserts: TableInserts): Promise<void> {
    let sinceYield = 0;
    for (const message of batch.messages) {
      // While chDB writes, let its completions start the next insert now and then.
      if (inserts.inserting && (sinceYield += 1) === YIELD_EVERY) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      mapMessage(deps.decode, message, outcome, inserts);
    }
  }

  /**
   * Loads several batches as one: every table gets one insert for all of them, and the rollup one
   * recompute, which is what a busy loader saves on (each statement has a fixed cost). The results
   * are per batch, in order; a warehouse failure is a retry of every batch. The batches are mapped
   * topic by topic, the largest first (TableInserts says why; docs/architecture.md).
   */
  async function loadMany(batches: readonly LoaderBatch[]): Promise<LoadResult[]> {
    const outcomes = batches.map((batch) => new BatchOutcome(batch));
    const inserts = new TableInserts(deps.warehouse, insertTokens(batches));
    try {
      for (const topic of byTopic(batches)) {
        for (const b of topic) await mapBatch(batches[b]!, outcomes[b]!, inserts);
        inserts.insertEvents();
      }
      await inserts.finish();
    } catch (error) {
      // Also a value the warehouse cannot store (encode throws): this build's bug, not the
      // message's, so the load is retried, as when the insert refused it, and nothing dead-lettered.
      await inserts.settle();
      return retryAll(batches, error);
    }
    return outcomes.map((outcome) => outcome.result());
  }

  async function load(batch: LoaderBatch): Promise<LoadResult> {
    if (batch.messages.length === 0) {
      return { kind: 'retry', error: new Error('empty batch: nothing to load or commit'), messages: [] };
    }
    return (await loadMany([batch]))[0]!;
  }

  return { load, loadMany };
}
