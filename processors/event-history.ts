/**
 * The event log read back from its beginning, for a check that recomputes state from events alone
 * (npm run ops -- verify-statement; docs/decisions/ledger.md, "Statements"). Two sources, the two
 * event logs of the service:
 *
 *   - the outbox (the embedded log's durable copy, which keeps every event): each row goes through
 *     the relay's codec, encoded to the Avro bytes the log carries and decoded as a consumer does;
 *   - Kafka (distributed mode): the events' topics from offset 0 up to the high watermarks taken at
 *     the start, with a consumer group of its own that is deleted afterwards. Kafka keeps what its
 *     retention keeps: the check needs topics retained (or compacted) as long as the history it checks.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../core/config.js';
import { sql, type Database } from '../core/db.js';
import type { DecodedEvent, EventType, OutboxRow } from '../schemas/event-contract.js';
import type { AvroCodec } from './avro/codec.js';
import { createKafkajsClient } from './event-log/kafka.js';
import { topicsOf } from './event-log/topics.js';

export interface HistoryFilter {
  programId: number;
  /** Events that happened before this time (an event's occurred_at is never later than its record's creation). */
  before: Date;
  types: readonly EventType[];
}

const PAGE = 5_000;
const outboxPage = sql(
  'event_history.outbox_page',
  `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
     FROM outbox
    WHERE id > $1 AND program_id = $2 AND occurred_at < $3 AND event_type = ANY ($4::text[])
    ORDER BY id
    LIMIT $5`,
);

/** The program's events from the outbox, through the Avro bytes. */
export async function outboxHistory(db: Database, codec: Pick<AvroCodec, 'message' | 'decode'>, f: HistoryFilter): Promise<DecodedEvent[]> {
  const events: DecodedEvent[] = [];
  for (let after = 0; ; ) {
    const rows = await db.many<OutboxRow>(outboxPage, [after, f.programId, f.before.toISOString(), f.types, PAGE]);
    for (const row of rows) events.push(codec.decode(codec.message(row).value));
    if (rows.length < PAGE) return events;
    after = Number(rows.at(-1)!.id);
  }
}

/** The program's events from Kafka, every partition of the events' topics read to its end. */
export async function kafkaHistory(
  config: KafkaConfig,
  codec: Pick<AvroCodec, 'decode' | 'route' | 'eventTypes'>,
  f: HistoryFilter,
  logger: Logger,
): Promise<DecodedEvent[]> {
  const names = topicsOf(codec, config.topicPrefix);
  const topics = [...new Set(f.types.map((t) => names.name(codec.route(t).topic)))];
  const kafka = createKafkajsClient(config, logger, '-history');
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `${config.clientId}-history-${randomBytes(4).toString('hex')}`;
  try {
    // Where each partition ends now: what was written before the check started.
    const remaining = new Map<string, bigint>();
    for (const topic of topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) {
        if (BigInt(p.high) > BigInt(p.low)) remaining.set(`${topic}/${p.partition}`, BigInt(p.high));
      }
    }
    const events: DecodedEvent[] = [];
    if (remaining.size === 0) return events;
    const wanted = new Set<string>(f.types);
    const consumer = kafka.consumer({ groupId });
    await consumer.connect();
    try {
      await consumer.subscribe({ topics, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        consumer
          .run({
            autoCommit: false,
            eachBatch: async ({ batch }) => {
              const at = `${batch.topic}/${batch.partition}`;
              const end = remaining.get(at);
              for (const message of batch.messages) {
                if (end === undefined || BigInt(message.offset) >= end || !message.value) continue;
                const event = codec.decode(message.value);
                if (wanted.has(event.eventType) && event.value.program_id === f.programId && Date.parse(event.value.occurred_at) < f.before.getTime()) {
                  events.push(event);
                }
                if (BigInt(message.offset) + 1n >= end) remaining.delete(at);
              }
              if (remaining.size === 0) resolve();
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
    return events;
  } finally {
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}
