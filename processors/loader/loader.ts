import { createHash } from 'node:crypto';
import { TabSeparatedWriter, type Warehouse } from '../../core/warehouse.js';
import type { DecodedEvent, EventPayloads, EventType } from '../../schemas/event-contract.js';
import { recomputeHours, saleFacts, type RollupKey } from './rollup.js';
import type { LogMessage } from '../event-log/event-log.js';

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

export interface DeadLetter {
  topic: string;
  partition: number;
  offset: string;
  stage: 'loader.decode' | 'loader.map';
  reason: string;
  message: BatchMessage;
}

export interface LoaderDeps {
  warehouse: Warehouse;
  /** Bytes to event; throws on bytes it cannot read (the Avro codec's decode). */
  decode(value: Buffer): DecodedEvent;
}

export type Row = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Field readers: a value that does not fit its column makes the message a dead letter, naming it.

class MappingError extends Error {}

const fail = (field: string, expected: string, value: unknown): never => {
  throw new MappingError(`${field}: expected ${expected}, got ${JSON.stringify(value) ?? String(value)}`);
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]00(?::?00)?)?$/;
const CODEC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/*
 * Readers take the field's name from the record's type, so a mapper can read only its payload's
 * fields (schemas/event-contract.ts): `NoInfer` keeps a misspelt name from widening the type.
 */
type Fields<F extends string> = { readonly [K in F]?: unknown };

function str<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = o[field];
  return typeof v === 'string' ? v : fail(field, 'a string', v);
}
function uuid<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = str(o, field);
  return UUID.test(v) ? v.toLowerCase() : fail(field, 'a UUID', v);
}
function int<F extends string>(o: Fields<F>, field: NoInfer<F>): number {
  const v = typeof o[field] === 'string' && /^-?\d+$/.test(o[field] as string) ? Number(o[field]) : o[field];
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : fail(field, 'an integer', o[field]);
}
function bool<F extends string>(o: Fields<F>, field: NoInfer<F>): boolean {
  const v = o[field];
  return typeof v === 'boolean' ? v : fail(field, 'a boolean', v);
}
/** 'YYYY-MM-DD hh:mm:ss.ffffff' in UTC: what DateTime64(6, 'UTC') reads on any server, microseconds kept. */
function time<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = o[field];
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) fail(field, 'a timestamp', v);
    return v.toISOString().replace('T', ' ').replace('Z', '000');
  }
  if (typeof v !== 'string') return fail(field, 'a timestamp', v);
  // What the Avro codec decodes to (`2025-03-01T12:00:00.123456Z`), without a match array: only speed.
  if (v.length === 27 && CODEC_TIME.test(v)) return `${v.slice(0, 10)} ${v.slice(11, 26)}`;
  const m = ISO.exec(v);
  // Without a zone the time is UTC (what Postgres and the Avro codec write is UTC anyway).
  if (m) {
    return `${m[1]} ${m[2]}.${(m[3] ?? '').padEnd(6, '0').slice(0, 6)}`;
  }
  // Another offset: exact to the millisecond through Date.
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? fail(field, 'a timestamp', v) : time({ [field]: d }, field);
}
const nullable =
  <T>(read: (o: Row, field: string) => T) =>
  <F extends string>(o: Fields<F>, field: NoInfer<F>): T | null =>
    o[field] === null || o[field] === undefined ? null : read(o, field);
const intOrNull = nullable(int);
const strOrNull = nullable(str);
const timeOrNull = nullable(time);

/** The UTC hour of a time as time() writes it: `YYYY-MM-DD hh:00:00`. */
const hourOf = (t: string) => `${t.slice(0, 13)}:00:00`;

/**
 * A performance fact (0003_performance_rollup.sql): an entity a dashboard figure counts, at the
 * hour it counts in, and whether it counts now. A refund's fact has no hour yet: loadFacts takes
 * it, and the sale's amount and currency, from sales_current; its cents are the part refunded so
 * far (0 for a full refund, which counts no more), which loadFacts takes off the amount.
 */
interface Fact extends Row {
  program_id: number;
  hour: string | null;
  metric: 'clicks' | 'leads' | 'conversions' | 'sales' | 'commissions' | 'partners';
  entity: string;
  currency: string;
  cents: number;
  counts: boolean;
  version: number;
}

const FACTS = 'performance_facts';

/**
 * The versions of a commission (commissions_current) and of the sales and commissions facts
 * (0005_partial_refunds.sql): created 1, a partial refund 2 + the cents taken off so far (which only
 * grow), and the full refund, chargeback or reversal that ends them above any of those.
 */
const CREATED = 1;
const adjusted = (centsTakenOff: number) => 2 + centsTakenOff;
const ENDED = Number.MAX_SAFE_INTEGER;

// Rows are put together with literals and Object.assign, never an object spread: in V8 a spread
// followed by more properties costs over a microsecond, Object.assign a few dozen nanoseconds, and
// a loader maps tens of thousands of events a second.
type FactFields = Pick<Fact, 'program_id' | 'hour' | 'metric' | 'entity' | 'counts' | 'version'> & Partial<Pick<Fact, 'currency' | 'cents'>>;

const fact = (f: FactFields): [string, Fact] => [
  FACTS,
  { program_id: f.program_id, hour: f.hour, metric: f.metric, entity: f.entity, currency: f.currency ?? '', cents: f.cents ?? 0, counts: f.counts, version: f.version },
];

function payloadOf(event: DecodedEvent): Row {
  const p = event.value.payload;
  return p !== null && typeof p === 'object' ? p : fail('payload', 'a record', p);
}

/** What every event carries, read and checked: the first columns of every event table. */
interface Envelope extends Row {
  event_id: string;
  program_id: number;
  occurred_at: string;
  test: boolean;
}

function envelope(event: DecodedEvent, payload: Row): Envelope {
  const v = event.value as unknown as Row;
  const programId = int(v, 'program_id');
  const payloadProgram = payload.program_id;
  if (payloadProgram !== undefined && Number(payloadProgram) !== programId) {
    fail('payload.program_id', `the envelope's program ${programId}`, payloadProgram);
  }
  return { event_id: uuid(v, 'event_id'), program_id: programId, occurred_at: time(v, 'occurred_at'), test: bool(v, 'test') };
}

/** An event table's row: the envelope's columns, then the event's own. */
const eventRow = (e: Envelope, ...columns: Row[]): Row => Object.assign({ event_id: e.event_id, program_id: e.program_id, occurred_at: e.occurred_at, test: e.test }, ...columns);

// ---------------------------------------------------------------------------------------------
// Event to rows: the event table's row, and the current-state row where the event changes state.

type Mapped = Array<[table: string, row: Row]>;

/** A payload as decoded: the contract's fields, each still to be read and checked. */
type Received<T extends EventType> = { readonly [K in keyof EventPayloads[T]]?: unknown };

/** One event type's rows; every type has one, or the build breaks. */
type Mapper<T extends EventType> = (e: Envelope, p: Received<T>) => Mapped;

const commission = (p: Received<'commission.created' | 'commission.reversed' | 'commission.adjusted'>) => ({
  commission_id: uuid(p, 'commission_id'),
  sale_id: uuid(p, 'sale_id'),
  partner_id: int(p, 'partner_id'),
  amount_cents: int(p, 'amount_cents'),
  currency: str(p, 'currency'),
  status: str(p, 'status'),
  created_at: time(p, 'created_at'),
});

const commissionFact = (e: Envelope, c: ReturnType<typeof commission>, counts: boolean, version: number) =>
  fact({ program_id: e.program_id, hour: hourOf(c.created_at), metric: 'commissions', entity: c.commission_id, currency: c.currency, cents: c.amount_cents, counts, version });

const fee = (p: Received<'platform_fee.created' | 'platform_fee.reversed' | 'platform_fee.adjusted'>) => ({
  platform_fee_id: uuid(p, 'platform_fee_id'),
  commission_id: uuid(p, 'commission_id'),
  sale_id: uuid(p, 'sale_id'),
  amount_cents: int(p, 'amount_cents'),
  currency: str(p, 'currency'),
  created_at: time(p, 'created_at'),
});

const MAPPERS: { readonly [T in EventType]: Mapper<T> } = {
  'click.recorded': (e, p) => [
    [
      'click_recorded',
      eventRow(e, {
        click_id: str(p, 'click_id'),
        partner_id: intOrNull(p, 'partner_id'),
        referral_link_id: int(p, 'referral_link_id'),
        created_at: time(p, 'created_at'),
      }),
    ],
    fact({ program_id: e.program_id, hour: hourOf(e.occurred_at), metric: 'clicks', entity: e.event_id, counts: !e.test, version: 0 }),
  ],

  'customer.changed': (e, p) => {
    const snapshot = {
      customer_id: int(p, 'customer_id'),
      partner_id: intOrNull(p, 'partner_id'),
      partner_program_id: intOrNull(p, 'partner_program_id'),
      click_id: strOrNull(p, 'click_id'),
      status: str(p, 'status'),
      provisional: bool(p, 'provisional'),
      signup_date: timeOrNull(p, 'signup_date'),
      first_purchase_date: timeOrNull(p, 'first_purchase_date'),
      version: int(p, 'version'),
      updated_at: time(p, 'updated_at'),
    };
    const test = bool(p, 'test');
    const { status, provisional, version } = snapshot;
    const entity = String(snapshot.customer_id);
    const rows: Mapped = [
      ['customer_changed', eventRow(e, { change: str(p, 'change') }, snapshot)],
      ['customers_current', Object.assign({ program_id: e.program_id }, snapshot, { test })],
    ];
    if (snapshot.signup_date !== null) {
      const counts = (status === 'lead' || status === 'conversion') && !provisional && !test;
      rows.push(fact({ program_id: e.program_id, hour: hourOf(snapshot.signup_date), metric: 'leads', entity, counts, version }));
    }
    if (snapshot.first_purchase_date !== null) {
      rows.push(fact({ program_id: e.program_id, hour: hourOf(snapshot.first_purchase_date), metric: 'conversions', entity, counts: status === 'conversion' && !test, version }));
    }
    return rows;
  },

  'sale.recorded': (e, p) => {
    const sale = {
      sale_id: uuid(p, 'sale_id'),
      transaction_id: str(p, 'transaction_id'),
      customer_id: intOrNull(p, 'customer_id'),
      partner_id: intOrNull(p, 'partner_id'),
      amount_cents: int(p, 'amount_cents'),
      currency: str(p, 'currency'),
      is_recurring: bool(p, 'is_recurring'),
    };
    const status = str(p, 'status');
    const occurredAt = time(p, 'occurred_at');
    return [
      ['sale_recorded', eventRow(e, sale, { status, created_at: time(p, 'created_at') })],
      [
        'sales_current',
        Object.assign({ program_id: e.program_id }, sale, {
          refunded_cents: 0,
          occurred_at: occurredAt,
          test: e.test,
          recorded_status: status,
          changed_status: '',
          status_changed_at: null,
        }),
      ],
      fact({
        program_id: e.program_id,
        hour: hourOf(occurredAt),
        metric: 'sales',
        entity: sale.sale_id,
        currency: sale.currency,
        cents: sale.amount_cents,
        counts: status === 'paid' && !e.test,
        version: CREATED,
      }),
    ];
  },

  'sale.status_changed': (e, p) => {
    const change = {
      sale_id: uuid(p, 'sale_id'),
      transaction_id: str(p, 'transaction_id'),
      status: str(p, 'status'),
      reason: str(p, 'reason'),
      refund_id: uuid(p, 'refund_id'),
      changed_at: time(p, 'changed_at'),
    };
    // The facts are the sale.recorded row's; here they stay empty and max() keeps the recorded ones.
    return [
      ['sale_status_changed', eventRow(e, change)],
      [
        'sales_current',
        {
          program_id: e.program_id,
          sale_id: change.sale_id,
          transaction_id: change.transaction_id,
          customer_id: null,
          partner_id: null,
          amount_cents: 0,
          refunded_cents: 0,
          currency: '',
          occurred_at: null,
          is_recurring: false,
          test: e.test,
          recorded_status: '',
          changed_status: change.status,
          status_changed_at: change.changed_at,
        },
      ],
      fact({ program_id: e.program_id, hour: null, metric: 'sales', entity: change.sale_id, counts: change.status === 'paid' && !e.test, version: ENDED }),
    ];
  },

  'sale.partially_refunded': (e, p) => {
    const refund = {
      partial_refund_id: uuid(p, 'partial_refund_id'),
      sale_id: uuid(p, 'sale_id'),
      transaction_id: str(p, 'transaction_id'),
      amount_cents: int(p, 'amount_cents'),
      refunded_cents: int(p, 'refunded_cents'),
      currency: str(p, 'currency'),
      refunded_at: time(p, 'refunded_at'),
    };
    // Only the refunded total here; max() keeps the recorded facts and the highest total.
    return [
      ['sale_partially_refunded', eventRow(e, refund)],
      [
        'sales_current',
        {
          program_id: e.program_id,
          sale_id: refund.sale_id,
          transaction_id: refund.transaction_id,
          customer_id: null,
          partner_id: null,
          amount_cents: 0,
          refunded_cents: refund.refunded_cents,
          currency: '',
          occurred_at: null,
          is_recurring: false,
          test: e.test,
          recorded_status: '',
          changed_status: '',
          status_changed_at: null,
        },
      ],
      fact({
        program_id: e.program_id,
        hour: null,
        metric: 'sales',
        entity: refund.sale_id,
        cents: refund.refunded_cents,
        counts: !e.test,
        version: adjusted(refund.refunded_cents),
      }),
    ];
  },

  'commission.created': (e, p) => {
    const c = commission(p);
    return [
      ['commission_created', eventRow(e, c)],
      ['commissions_current', Object.assign({ program_id: e.program_id }, c, { reversed_at: null, state_version: CREATED })],
      commissionFact(e, c, c.status !== 'reversed', CREATED),
    ];
  },

  'commission.adjusted': (e, p) => {
    const c = commission(p);
    const reversedCents = int(p, 'reversed_cents');
    const version = adjusted(reversedCents);
    return [
      ['commission_adjusted', eventRow(e, c, { reversed_cents: reversedCents })],
      ['commissions_current', Object.assign({ program_id: e.program_id }, c, { reversed_at: null, state_version: version })],
      commissionFact(e, c, c.status !== 'reversed', version),
    ];
  },

  'commission.reversed': (e, p) => {
    const c = commission(p);
    return [
      ['commission_reversed', eventRow(e, c)],
      ['commissions_current', Object.assign({ program_id: e.program_id }, c, { status: 'reversed', reversed_at: e.occurred_at, state_version: ENDED })],
      commissionFact(e, c, false, ENDED),
    ];
  },

  'platform_fee.created': (e, p) => [['platform_fee_created', eventRow(e, fee(p))]],
  'platform_fee.reversed': (e, p) => [['platform_fee_reversed', eventRow(e, fee(p))]],
  'platform_fee.adjusted': (e, p) => [['platform_fee_adjusted', eventRow(e, fee(p), { reversed_cents: int(p, 'reversed_cents') })]],

  'partner_program.changed': (e, p) => {
    const record = {
      partner_program_id: int(p, 'partner_program_id'),
      partner_id: intOrNull(p, 'partner_id'),
      status: str(p, 'status'),
      created_at: time(p, 'created_at'),
      updated_at: time(p, 'updated_at'),
    };
    return [
      ['partner_program_changed', eventRow(e, record)],
      fact({ program_id: e.program_id, hour: hourOf(record.created_at), metric: 'partners', entity: String(record.partner_program_id), counts: true, version: 0 }),
    ];
  },

  'test_event.logged': (e, p) => [
    [
      'test_event_logged',
      eventRow(e, {
        tracking_log_id: int(p, 'tracking_log_id'),
        event_type: str(p, 'event_type'),
        entity_id: str(p, 'entity_id'),
        created_at: time(p, 'created_at'),
      }),
    ],
  ],
};

/**
 * Inserted in this order: events first (topic by topic, in no fixed order among themselves), current
 * state once every event table is acknowledged (a reader never sees state without its event), then
 * the performance facts, and last the rollup hours they touched are recomputed.
 */
const EVENT_TABLES = [
  'click_recorded',
  'customer_changed',
  'sale_recorded',
  'sale_status_changed',
  'commission_created',
  'commission_reversed',
  'platform_fee_created',
  'platform_fee_reversed',
  'sale_partially_refunded',
  'commission_adjusted',
  'platform_fee_adjusted',
  'partner_program_changed',
  'test_event_logged',
] as const;
const STATE_TABLES = ['customers_current', 'sales_current', 'commissions_current'] as const;

export const WAREHOUSE_TABLES = [...EVENT_TABLES, ...STATE_TABLES, FACTS, 'performance_hourly'] as const;

/** The warehouse rows of one event; throws (a MappingError) when the event does not fit them. */
export function eventRows(event: DecodedEvent): Mapped {
  // The type comes off the wire: a message can name one this build does not know.
  const mapper = (MAPPERS as Partial<Record<string, (e: Envelope, p: Row) => Mapped>>)[event.eventType];
  if (!mapper) throw new MappingError(`no warehouse table for event type ${JSON.stringify(event.eventType)}`);
  const payload = payloadOf(event);
  return mapper(envelope(event, payload), payload);
}

/**
 * The insert token of one table's rows from one batch: the batch's place in the log (topic,
 * partition, first and last offset) and a hash of its bytes, so the same range redelivered gives
 * the same token, and a range whose content differs (a recreated topic) never collides with it.
 */
export function dedupToken(batch: LoaderBatch, table: string, contentHash: string): string {
  const first = batch.messages[0]!.offset;
  const last = batch.messages[batch.messages.length - 1]!.offset;
  return `${batch.topic}/${batch.partition}/${first}-${last}/${contentHash}/${table}`;
}

/**
 * The tokens of a load: one batch's are dedupToken's; batches loaded together are named by the
 * hash of their ranges (such a combination recurs only by chance, so their redelivery is caught by
 * FINAL and the rollup's recompute rather than by the token).
 */
function tokenOf(batches: readonly LoaderBatch[], contentHash: string) {
  const combined =
    batches.length === 1
      ? undefined
      : createHash('sha256')
          .update(batches.map((b) => `${b.topic}/${b.partition}/${b.messages[0]!.offset}-${b.messages[b.messages.length - 1]!.offset}`).join('\n'))
          .digest('hex')
          .slice(0, 32);
  return (table: string, extraHash = '') => {
    const hash = extraHash ? `${contentHash}.${extraHash}` : contentHash;
    return combined === undefined ? dedupToken(batches[0]!, table, hash) : `combined/${combined}/${hash}/${table}`;
  };
}

/** Messages mapped between two turns of the event loop while inserts run. */
const YIELD_EVERY = 500;

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

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

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

/**
 * Loads batches of log messages into the warehouse. Never throws: a message that does not decode
 * or map is a dead letter (with its reason) and the rest of the batch loads; a warehouse failure
 * is a retry of the whole batch. The caller commits nextOffset only after an `ok`.
 */
export function createLoader(deps: LoaderDeps): CombiningLoader {
  /**
   * Writes the load's facts (placed ones already encoded in `facts`), completing refunds' from
   * sales_current, then recomputes the hours they touch (`hours`, keyed by program and hour).
   */
  async function loadFacts(token: (table: string, extraHash?: string) => string, facts: TabSeparatedWriter, hours: Map<string, RollupKey>, refunds: Fact[]): Promise<void> {
    let completedHash = '';
    if (refunds.length) {
      const sales = new Map((await saleFacts(deps.warehouse, refunds.map((f) => ({ program_id: f.program_id, sale_id: f.entity })))).map((s) => [s.sale_id, s]));
      // A refund of a sale the warehouse never had (dead-lettered) takes nothing away.
      const completed = refunds.flatMap((f) => {
        const sale = sales.get(f.entity);
        return sale ? [{ ...f, hour: sale.hour, currency: sale.currency, cents: Number(sale.amount_cents) - f.cents }] : [];
      });
      if (completed.length) {
        // What was looked up is part of the token, so a retry that finds more is never taken for a duplicate.
        completedHash = createHash('sha256').update(JSON.stringify(completed)).digest('hex').slice(0, 16);
        for (const f of completed) {
          facts.add(facts.encode(f));
          hours.set(`${f.program_id} ${f.hour}`, { program_id: f.program_id, hour: f.hour });
        }
      }
    }
    // One insert (one part) for all of them: each insert costs a part's files whatever its size.
    if (facts.count) await deps.warehouse.insert(FACTS, facts.finish(), { dedupToken: token(FACTS, completedHash) });
    await recomputeHours(deps.warehouse, [...hours.values()]);
  }

  /**
   * Loads several batches as one: every table gets one insert for all of them, and the rollup one
   * recompute, which is what a busy loader saves on (each statement has a fixed cost). The results
   * are per batch, in order; a warehouse failure is a retry of every batch.
   *
   * Only for speed (docs/architecture.md): rows are encoded for the warehouse as each event is
   * mapped, not kept as objects until the inserts (TabSeparatedWriter); and the batches are mapped
   * topic by topic, the largest first, each topic's event tables handed to the warehouse as soon as
   * it is mapped, so that chDB writes them on its threads while this one maps the next topic. The
   * current-state tables, the facts and the rollup follow once every event table is acknowledged.
   */
  async function loadMany(batches: readonly LoaderBatch[]): Promise<LoadResult[]> {
    const outcomes = batches.map(() => ({ messages: [] as MessageResult[], deadLetters: [] as DeadLetter[] }));
    const hash = createHash('sha256');
    // The offset and its NUL in one update: the same bytes hashed as in three, one call fewer per message.
    for (const batch of batches) for (const message of batch.messages) hash.update(`${message.offset}\0`).update(message.value);
    const token = tokenOf(batches, hash.digest('hex').slice(0, 32));
    const writers = new Map<string, TabSeparatedWriter>();
    const writerOf = (table: string) => {
      let writer = writers.get(table);
      if (!writer) writers.set(table, (writer = new TabSeparatedWriter()));
      return writer;
    };
    /** The hours the facts touch, and the refunds' facts, completed at the end (loadFacts). */
    const hours = new Map<string, RollupKey>();
    const refunds: Fact[] = [];
    /** Decodes and maps one message into the writers; one that does not fit is a dead letter with its reason. */
    const mapMessage = (batch: LoaderBatch, message: BatchMessage, { messages, deadLetters }: (typeof outcomes)[number]) => {
      let event: DecodedEvent;
      try {
        event = deps.decode(message.value);
      } catch (error) {
        const reason = `undecodable: ${reasonOf(error)}`;
        messages.push({ offset: message.offset, outcome: 'dead-letter', reason });
        deadLetters.push({ topic: batch.topic, partition: batch.partition, offset: message.offset, stage: 'loader.decode', reason, message });
        return;
      }
      let rows: Mapped;
      try {
        rows = eventRows(event);
      } catch (error) {
        const reason = `unmappable ${event.eventType} event: ${reasonOf(error)}`;
        messages.push({ offset: message.offset, outcome: 'dead-letter', reason });
        deadLetters.push({ topic: batch.topic, partition: batch.partition, offset: message.offset, stage: 'loader.map', reason, message });
        return;
      }
      for (const [table, row] of rows) {
        const f = table === FACTS ? (row as Fact) : undefined;
        if (f?.hour === null) {
          refunds.push(f);
          continue;
        }
        if (f) hours.set(`${f.program_id} ${f.hour}`, { program_id: f.program_id, hour: f.hour! });
        const writer = writerOf(table);
        writer.add(writer.encode(row));
      }
      messages.push({ offset: message.offset, outcome: 'ok', eventType: event.eventType, eventId: String(event.value.event_id) });
    };
    const eventInserts: Promise<void>[] = [];
    const parts = new Map<string, number>();
    /** Hands the event tables' rows mapped so far to the warehouse, without waiting. */
    const insertEvents = () => {
      for (const table of EVENT_TABLES) {
        const writer = writers.get(table);
        if (!writer?.count) continue;
        writers.delete(table);
        const part = (parts.get(table) ?? 0) + 1;
        parts.set(table, part);
        // Events of one table come on one topic; should they come on two, the second part has its own token.
        const inserted = deps.warehouse.insert(table, writer.finish(), { dedupToken: token(table, part === 1 ? '' : `part${part}`) });
        inserted.catch(() => undefined);
        eventInserts.push(inserted);
      }
    };
    try {
      for (const topic of byTopic(batches)) {
        for (const b of topic) {
          const batch = batches[b]!;
          let sinceYield = 0;
          for (const message of batch.messages) {
            // While chDB writes, let its completions start the next insert now and then.
            if (eventInserts.length && (sinceYield += 1) === YIELD_EVERY) {
              sinceYield = 0;
              await new Promise<void>((resolve) => setImmediate(resolve));
            }
            mapMessage(batch, message, outcomes[b]!);
          }
        }
        insertEvents();
      }
      // Every event table acknowledged before any current state: a reader never sees state without its event.
      const failed = (await Promise.allSettled(eventInserts)).find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      for (const table of STATE_TABLES) {
        const writer = writers.get(table);
        if (writer) await deps.warehouse.insert(table, writer.finish(), { dedupToken: token(table) });
      }
      await loadFacts(token, writerOf(FACTS), hours, refunds);
    } catch (error) {
      // Also a value the warehouse cannot store (encode throws): this build's bug, not the
      // message's, so the load is retried, as when the insert refused it, and nothing dead-lettered.
      await Promise.allSettled(eventInserts);
      return retryAll(batches, error);
    }
    return batches.map((batch, b) => ({
      kind: 'ok',
      nextOffset: (BigInt(batch.messages[batch.messages.length - 1]!.offset) + 1n).toString(),
      loaded: outcomes[b]!.messages.filter((m) => m.outcome === 'ok').length,
      ...outcomes[b]!,
    }));
  }

  async function load(batch: LoaderBatch): Promise<LoadResult> {
    if (batch.messages.length === 0) {
      return { kind: 'retry', error: new Error('empty batch: nothing to load or commit'), messages: [] };
    }
    return (await loadMany([batch]))[0]!;
  }

  return { load, loadMany };
}

export interface Loader {
  load(batch: LoaderBatch): Promise<LoadResult>;
}

/** A loader that can also load several batches as one (the Kafka loader's batches of one fetch). */
export interface CombiningLoader extends Loader {
  loadMany(batches: readonly LoaderBatch[]): Promise<LoadResult[]>;
}
