/**
 * Where the pipeline's time goes: the relay and the loader run in the benchmark's own process,
 * the real components (createRelay, createLoader) with their dependencies wrapped in timers.
 *   relay:  wall time of encoding, of publishing (Kafka until acks), and the rest (Postgres: the
 *           lock, the pending query, the mark, the commit);
 *   loader: wall time of decoding, of the warehouse inserts (chDB: JSON encoding, parsing, writing
 *           parts), and the rest (mapping to rows, the batch hash).
 * Figures are ms per 1,000 events. The process is otherwise idle, but the machine is not.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../../core/config.js';
import type { Database } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import type { AvroCodec } from '../../processors/avro/codec.js';
import type { EventLog, LogMessage } from '../../processors/event-log/event-log.js';
import { createKafkaEventLog, ensureTopics } from '../../processors/event-log/kafka.js';
import { createLoader, type LoaderBatch } from '../../processors/loader/loader.js';
import { createRelay } from '../../processors/relay.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { fmtFinite as fmt, log } from '../output.js';
import { resetOutbox } from './drain.js';
import { kafkaConfig } from './kafka.js';
import type { Bench } from './lifecycle.js';

export interface RelayBreakdown {
  relayed: number;
  batches: number;
  /** ms per 1,000 events. */
  encode: number;
  publish: number;
  postgres: number;
  total: number;
}

/** Relays the whole outbox in this process; returns the timings and the messages it published. */
export async function relayBreakdown(options: {
  db: Database;
  kafka: KafkaConfig;
  codec: AvroCodec;
  batchSize: number;
  logger: Logger;
}): Promise<{ figures: RelayBreakdown; messages: LogMessage[] }> {
  const { codec, kafka } = options;
  const topics = topicsOf(codec, kafka.topicPrefix);
  await ensureTopics(kafka, [...topics.events, topics.deadLetter], options.logger);
  const inner = await createKafkaEventLog(kafka, options.logger);
  const messages: LogMessage[] = [];
  let encodeMs = 0;
  let publishMs = 0;
  const log: EventLog = {
    async publish(batch) {
      const started = performance.now();
      await inner.publish(batch);
      publishMs += performance.now() - started;
      for (const m of batch) messages.push(m);
    },
    close: () => inner.close(),
  };
  const relay = createRelay({
    db: options.db,
    log,
    encode: (row) => {
      const started = performance.now();
      const m = codec.message(row);
      encodeMs += performance.now() - started;
      return { ...m, topic: topics.name(m.topic) };
    },
    deadLetterTopic: topics.deadLetter,
    batchSize: options.batchSize,
  });
  let relayed = 0;
  let batches = 0;
  const started = performance.now();
  try {
    for (;;) {
      const result = await relay.relayOnce();
      if (result.kind === 'idle') break;
      if (result.kind === 'retry') throw result.error;
      if (result.kind === 'busy') throw new Error('another relay holds the lock');
      relayed += result.relayed;
      batches += 1;
    }
  } finally {
    await log.close();
  }
  const totalMs = performance.now() - started;
  const per = (ms: number) => (ms / relayed) * 1000;
  return {
    figures: { relayed, batches, encode: per(encodeMs), publish: per(publishMs), postgres: per(totalMs - encodeMs - publishMs), total: per(totalMs) },
    messages,
  };
}

export interface LoaderBreakdown {
  loaded: number;
  batches: number;
  /** ms per 1,000 events. */
  decode: number;
  insert: number;
  /** The rollup's statements: the refunds' sale lookup and the recompute of the touched hours. */
  rollup: number;
  mapAndHash: number;
  total: number;
}

/**
 * Loads the messages into a chDB warehouse in this process (opened once: chDB binds one
 * directory per process), batchSize consecutive messages of one topic at a time, as the loader's
 * consumer would hand them over.
 */
export async function loaderBreakdown(options: { messages: readonly LogMessage[]; codec: AvroCodec; chdbPath: string; batchSize: number }): Promise<LoaderBreakdown> {
  const real = await openWarehouse({ kind: 'chdb', path: options.chdbPath });
  try {
    await migrateWarehouse(real);
    const spent = { decode: 0, insert: 0, rollup: 0 };
    /** Runs a step and adds its time (until its promise settles, when it returns one) to spent. */
    const timed = <T>(step: keyof typeof spent, run: () => T): T => {
      const started = performance.now();
      const add = () => {
        spent[step] += performance.now() - started;
      };
      const result = run();
      if (result instanceof Promise) return result.finally(add) as T;
      add();
      return result;
    };
    // The loader hands several inserts over at once (they run one after another in chDB while it
    // maps on): their time is the time with at least one of them in flight, not the sum.
    let inFlight = 0;
    let since = 0;
    const insert: Warehouse['insert'] = (table, rows, insertOptions) => {
      if (inFlight++ === 0) since = performance.now();
      return real.insert(table, rows, insertOptions).finally(() => {
        if (--inFlight === 0) spent.insert += performance.now() - since;
      });
    };
    const warehouse: Warehouse = {
      kind: real.kind,
      insert,
      // The loader's only queries and commands are the rollup's: the refunds' lookup and the recompute.
      query: (q, p) => timed('rollup', () => real.query(q, p)),
      command: (q, p) => timed('rollup', () => real.command(q, p)),
      close: () => real.close(),
    };
    const loader = createLoader({ warehouse, decode: (value) => timed('decode', () => options.codec.decode(value)) });
    const byTopic = new Map<string, LogMessage[]>();
    for (const m of options.messages) {
      const list = byTopic.get(m.topic) ?? [];
      list.push(m);
      byTopic.set(m.topic, list);
    }
    const batches: LoaderBatch[] = [];
    for (const [topic, list] of byTopic) {
      for (let i = 0; i < list.length; i += options.batchSize) {
        batches.push({
          topic,
          partition: 0,
          messages: list.slice(i, i + options.batchSize).map((m, j) => ({ offset: String(i + j), key: m.key, value: m.value })),
        });
      }
    }
    let loaded = 0;
    const started = performance.now();
    for (const batch of batches) {
      const result = await loader.load(batch);
      if (result.kind !== 'ok') throw result.error;
      loaded += result.loaded;
    }
    const totalMs = performance.now() - started;
    const per = (ms: number) => (ms / loaded) * 1000;
    return {
      loaded,
      batches: batches.length,
      decode: per(spent.decode),
      insert: per(spent.insert),
      rollup: per(spent.rollup),
      mapAndHash: per(totalMs - spent.decode - spent.insert - spent.rollup),
      total: per(totalMs),
    };
  } finally {
    await real.close();
  }
}

/** Relays the outbox again in this process, then loads what it published, and prints where the time went. */
export async function runBreakdown(bench: Bench): Promise<void> {
  const { db, settings, config, run } = bench;
  await resetOutbox(db);
  const codec = createAvroCodec();
  log(`\nbreakdown: relay (kafkajs) and loader in the benchmark's process, each step timed (ms per 1,000 events)`);
  const relay = await relayBreakdown({ db, kafka: kafkaConfig(settings.brokers, 'kafkajs', `${run.prefix}breakdown.`), codec, batchSize: config.relay.batchSize, logger: bench.logger });
  const r = relay.figures;
  log(`  relay:  total ${fmt(r.total, 1)} = Postgres (lock, read, mark, commit) ${fmt(r.postgres, 1)} + encode ${fmt(r.encode, 1)} + publish until acked ${fmt(r.publish, 1)}` +
    `  (${fmt(r.relayed)} events, ${r.batches} batches, ${fmt(1_000_000 / r.total)} events/s)`);
  const l = await loaderBreakdown({ messages: relay.messages, codec, chdbPath: join(run.tmpDir, 'breakdown-ch'), batchSize: 5_000 });
  log(`  loader: total ${fmt(l.total, 1)} = decode ${fmt(l.decode, 1)} + map, encode and hash (beside the inserts) ${fmt(l.mapAndHash, 1)} + chDB inserts (any in flight) ${fmt(l.insert, 1)} + rollup recompute ${fmt(l.rollup, 1)}` +
    `  (${fmt(l.loaded)} events, ${l.batches} batches of up to 5,000, ${fmt(1_000_000 / l.total)} events/s)`);
}
