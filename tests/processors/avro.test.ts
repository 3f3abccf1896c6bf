import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import type { EventType } from '../../schemas/event-contract.js';
import {
  DEFAULT_AVRO_DIR,
  fingerprintHex,
  incompatibility,
  inspectCatalog,
  loadCatalog,
  parseSchema,
  rabinFingerprint,
  type CatalogFile,
} from '../../processors/avro/catalog.js';
import { AvroContractError, createAvroCodec, type EncodableRow } from '../../processors/avro/codec.js';
import { formatTimestampMicros, parseTimestampMicros } from '../../processors/avro/convert.js';
import { createInProcessLog } from '../../processors/event-log/in-process-log.js';
import { createRelay } from '../../processors/relay.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../support/app.js';
import { everyMoneyEvent } from '../support/money.js';
import { everyPartnerEvent } from '../support/partners.js';
import { partlyRefundedProcessorSale } from '../support/processor.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { importFxRates, OPERATOR_RATES } from '../../domain/fx/rates.js';

/** Every event type the tracking state emits; `satisfies` breaks the build when EventType grows. */
const EVENT_TYPES = Object.keys({
  'click.recorded': true,
  'customer.changed': true,
  'sale.recorded': true,
  'sale.status_changed': true,
  'commission.created': true,
  'commission.reversed': true,
  'platform_fee.created': true,
  'platform_fee.reversed': true,
  'partner_program.changed': true,
  'test_event.logged': true,
  'sale.partially_refunded': true,
  'commission.adjusted': true,
  'platform_fee.adjusted': true,
  'ledger_entry.recorded': true,
  'commission.approved': true,
  'payout.created': true,
  'payout.paid': true,
  'payout.canceled': true,
  'fx_rate.recorded': true,
  'commission.held': true,
  'partner.applied': true,
  'partner.approved': true,
} satisfies Record<EventType, true>) as EventType[];

type Json = Record<string, unknown>;
type Schema = Json & { fields: Json[] };

/** An instant in microseconds, parsed here without the codec's parser: Date.parse for the millisecond, the digits after. */
const ISO_PREFIX = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}/;
function instant(text: string): bigint {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new Error(`not a timestamp: ${text}`);
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? '';
  return BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, '0').slice(3, 6));
}
/** Timestamps become instants so `...123456+00:00` and `...123456Z` compare equal; everything else as is. */
function instants(value: unknown): unknown {
  if (typeof value === 'string' && ISO_PREFIX.test(value)) return { instant: instant(value) };
  if (value instanceof Date) return { instant: BigInt(value.getTime()) * 1000n };
  if (Array.isArray(value)) return value.map(instants);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, instants(v)]));
  return value;
}

const readSchema = (dir: string, file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Schema;
const payloadOf = (schema: Schema) => (schema.fields.find((f) => f.name === 'payload')!.type as Schema);

describe('Avro event contract: every outbox event of the real service round-trips', () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let strict: TestProgram; // server_required leads
  let rows: (EncodableRow & { id: number; aggregate_key: string; occurred_at_text: string })[];
  const codec = createAvroCodec();

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    strict = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
    const post = async (url: string, payload: Json, key?: string) => {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { 'x-forwarded-for': freshIp(), ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
        payload,
      });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
      return res.json();
    };
    const click = async (test = false) =>
      (await post('/api/v1/track/click', {
        affiliate_url: `https://shop.test.example/?aff=${strict.affCode}`,
        additional_data: { test_mode: test },
      })).click_id as string;

    // Clicks, one in test mode (click.recorded with test, test_event.logged).
    await click(true);
    // A server-mode lead, then its first payment (conversion, commission and fee), then a refund.
    await post('/api/v1/track/lead', { click_id: await click(), customer_key: 'cust-server', email: 'a@b.example' }, strict.apiKey);
    await post('/api/v1/track/sale', { transaction_id: 'txn-1', amount_cents: 12_345, customer_key: 'cust-server', currency: 'EUR' }, strict.apiKey);
    await post('/api/v1/track/refund', { transaction_id: 'txn-1', reason: 'refund', refund_reason: 'asked' }, strict.apiKey);
    // A browser lead on a server_required program: provisional; the server lead settles it.
    const browserClick = await click();
    await post('/api/v1/track/lead', { click_id: browserClick });
    await post('/api/v1/track/lead', { click_id: browserClick, customer_key: 'cust-browser' }, strict.apiKey);
    // A payment straight after a click (the customer starts as a conversion, no signup), charged back.
    await post('/api/v1/track/sale', { transaction_id: 'txn-2', amount_cents: 990, click_id: await click(), currency: 'USD' }, strict.apiKey);
    await post('/api/v1/track/refund', { transaction_id: 'txn-2', reason: 'chargeback' }, strict.apiKey);
    // Test mode: a lead on a test click and a test sale, each logged as a test event.
    await post('/api/v1/track/lead', { click_id: await click(true), additional_data: { test_mode: true } });
    await post('/api/v1/track/sale', { additional_data: { test_mode: true } }, strict.apiKey);
    // A processor payment partly refunded twice: sale.partially_refunded, commission.adjusted, platform_fee.adjusted.
    await partlyRefundedProcessorSale(app, strict.programId, await click());
    // The ledger and payouts: an owner's approval, a payout canceled, then one paid.
    await everyMoneyEvent(app, t.db);
    // Issue 30: the operator's daily rates (fx_rate.recorded, program 0).
    const fx = await importFxRates(t.db, OPERATOR_RATES, 'Date,USD,VND,\n2026-11-26,1.0512,27395.5,\n', '2026-11-27');
    if (!fx.ok) throw new Error(JSON.stringify(fx.problems));
    // Issue 31: an application, an approval, a rejection and a ban (partner_program.changed v2's banned).
    await everyPartnerEvent(app, strict);

    rows = await t.db.many(
      sql(
        't.avro_outbox',
        `SELECT id, event_id, event_type, aggregate_key, program_id, test, occurred_at, payload,
                to_jsonb(occurred_at) #>> '{}' AS occurred_at_text
           FROM outbox ORDER BY id`,
      ),
    );
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('the catalog covers exactly the event types of domain/outbox.ts', () => {
    expect([...codec.eventTypes].sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('every row decodes to its own envelope and payload; every event type is seen', () => {
    expect(rows.length).toBeGreaterThan(20);
    const seen = new Set<string>();
    for (const row of rows) {
      const eventType = row.event_type as EventType;
      const message = codec.encode(eventType, row);
      const route = codec.route(eventType);
      expect(message.readUInt32BE(1)).toBe(route.schemaId);
      const decoded = codec.decode(message);
      expect(decoded).toMatchObject({ eventType, schemaId: route.schemaId, version: route.version });
      expect(instants(decoded.value)).toEqual(
        instants({ event_id: row.event_id, program_id: row.program_id, occurred_at: row.occurred_at, test: row.test, payload: row.payload }),
      );
      // Field for field, nothing added or dropped.
      const fields = payloadOf(readSchema(DEFAULT_AVRO_DIR, `${eventType}.avsc`)).fields.map((f) => f.name);
      expect(Object.keys(row.payload).sort()).toEqual([...fields].sort());
      seen.add(eventType);
    }
    expect([...seen].sort()).toEqual([...EVENT_TYPES].sort());
    const changes = rows.filter((r) => r.event_type === 'customer.changed').map((r) => r.payload.change);
    expect(new Set(changes)).toEqual(new Set(['lead', 'provisional', 'settled', 'conversion']));
  });

  it('timestamps keep their microseconds when the relay reads occurred_at as text', () => {
    const clicks = rows.filter((r) => r.event_type === 'click.recorded');
    expect(clicks.length).toBeGreaterThan(0);
    for (const row of clicks) {
      const { value } = codec.decode(codec.encode('click.recorded', { ...row, occurred_at: row.occurred_at_text }));
      // occurred_at is the click's created_at, which jsonb keeps to the microsecond.
      expect(value.occurred_at).toBe(value.payload.created_at);
      expect(instant(value.occurred_at)).toBe(instant(row.payload.created_at as string));
      expect(value.occurred_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    }
  });

  it('through the relay: each event on its topic under its aggregate key; a row that does not fit is dead-lettered', async () => {
    await t.db.many(
      sql(
        't.avro_poison',
        `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
         SELECT 'sale.status_changed', aggregate_key, program_id, test, occurred_at, payload || '{"status": "disputed"}'
           FROM outbox WHERE event_type = 'sale.status_changed' LIMIT 1`,
      ),
    );
    const log = createInProcessLog();
    const relay = createRelay({ db: t.db, log, encode: codec.message, deadLetterTopic: 'tracking.dead-letter.v1', batchSize: 8 });
    while ((await relay.relayOnce()).kind === 'ok');
    const published = new Map<string, { topic: string; key: string }>();
    for (const topic of log.topics().filter((name) => name !== 'tracking.dead-letter.v1')) {
      for (const message of log.read(topic)) {
        const { eventType, value } = codec.decode(message.value);
        expect(codec.route(eventType).topic).toBe(topic);
        published.set(value.event_id, { topic, key: message.key });
      }
    }
    expect(published.size).toBe(rows.length);
    for (const row of rows) expect(published.get(row.event_id)).toEqual({ topic: codec.route(row.event_type as EventType).topic, key: row.aggregate_key });
    const dead = log.read('tracking.dead-letter.v1').map((m) => JSON.parse(m.value.toString()) as { reason: string });
    expect(dead).toMatchObject([{ reason: 'sale.status_changed: payload.status: expected one of paid, refunded, chargeback, got the string "disputed"' }]);
  });

  it('a row that does not fit its schema is refused with the field named', () => {
    const sale = rows.find((r) => r.event_type === 'sale.recorded' && !r.test)!;
    const bad = (payload: Json, row: Partial<EncodableRow> = {}) => () => codec.encode('sale.recorded', { ...sale, ...row, payload: { ...sale.payload, ...payload } });
    const cases: [() => unknown, string][] = [
      [bad({ amount_cents: '12' }), 'sale.recorded: payload.amount_cents: expected an integer'],
      [bad({ amount_cents: 1.5 }), 'payload.amount_cents: expected an integer'],
      [bad({ amount_cents: undefined }), 'payload.amount_cents: missing (required, no default)'],
      [bad({ status: 'lost' }), 'payload.status: expected one of paid, refunded, chargeback, got the string "lost"'],
      [bad({ status: 'unknown' }), 'payload.status: expected one of paid, refunded, chargeback'],
      [bad({ occurred_at: '2025-02-30T00:00:00Z' }), 'payload.occurred_at: expected an ISO-8601 timestamp'],
      [bad({ occurred_at: '2025-03-01T00:00:00' }), 'payload.occurred_at: expected an ISO-8601 timestamp with an offset'],
      [bad({ sale_id: 'not-a-uuid' }), 'payload.sale_id: expected a UUID string'],
      [bad({ customer_id: 'x' }), 'payload.customer_id: expected an integer'],
      [bad({ is_recurring: null }), 'payload.is_recurring: expected a boolean, got null'],
      [bad({ coupon: 'X' }), 'payload.coupon: not in the schema'],
      [bad({}, { event_id: 'x' }), 'sale.recorded: event_id: expected a UUID string'],
      [bad({}, { occurred_at: new Date(Number.NaN) }), 'occurred_at: expected a timestamp, got an invalid Date'],
      [bad({}, { program_id: 2 ** 53 }), 'program_id: expected an integer (64-bit, within 2^53)'],
    ];
    for (const [run, message] of cases) {
      expect(run).toThrow(AvroContractError);
      expect(run).toThrow(message);
    }
    expect(() => codec.encode('sale.recorded', { ...sale, event_type: 'click.recorded' })).toThrow('is a click.recorded event, not sale.recorded');
    expect(() => codec.encode('nope.happened' as EventType, sale)).toThrow('No Avro schema for event type "nope.happened"');
    // Nullable fields take null; customer_id is null on a test sale.
    expect(codec.decode(codec.encode('sale.recorded', { ...sale, payload: { ...sale.payload, customer_id: null } })).value.payload.customer_id).toBeNull();
  });
});

describe('Avro compatibility gate: the current schema reads every released version', () => {
  const catalog = loadCatalog();
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  /** A copy of schemas/avro to release a change in. */
  const scratchCatalog = () => {
    const dir = mkdtempSync(join(tmpdir(), 'avro-catalog-'));
    dirs.push(dir);
    cpSync(DEFAULT_AVRO_DIR, dir, { recursive: true });
    return dir;
  };
  /** Releases `schema` as the next version of `eventType` in `dir`, the way the catalog's $comment says. */
  const release = (dir: string, eventType: string, schema: Schema) => {
    const file = JSON.parse(readFileSync(join(dir, 'catalog.json'), 'utf8')) as CatalogFile;
    const entry = file.events[eventType]!;
    const version = entry.versions.length + 1;
    const historyFile = `history/${eventType}.v${version}.avsc`;
    writeFileSync(join(dir, entry.schema), JSON.stringify(schema, null, 2));
    writeFileSync(join(dir, historyFile), JSON.stringify(schema, null, 2));
    entry.versions.push({ version, id: file.next_id, file: historyFile, rabin: fingerprintHex(parseSchema(schema)) });
    file.next_id += 1;
    writeFileSync(join(dir, 'catalog.json'), JSON.stringify(file, null, 2));
    return entry.versions.at(-1)!.id;
  };
  const customerSchema = () => readSchema(DEFAULT_AVRO_DIR, 'customer.changed.avsc');
  const withPayloadField = (field: Json) => {
    const schema = customerSchema();
    payloadOf(schema).fields.push(field);
    return schema;
  };
  const withPayloadType = (name: string, type: unknown) => {
    const schema = customerSchema();
    const field = payloadOf(schema).fields.find((f) => f.name === name)!;
    field.type = type;
    delete field.default;
    return schema;
  };
  const withEnum = (name: string, change: (e: Json) => void) => {
    const schema = customerSchema();
    change(payloadOf(schema).fields.find((f) => f.name === name)!.type as Json);
    return schema;
  };

  it('the checked-in catalog has no problems: fingerprints, ids, current = latest release, compatibility', () => {
    expect(inspectCatalog().problems).toEqual([]);
  });

  it('for every event type, each released version is readable by the current schema', () => {
    let checked = 0;
    for (const event of catalog.events.values()) {
      for (const version of event.versions) {
        expect(incompatibility(event.type, version.type), `${event.eventType} v${version.version}`).toBeUndefined();
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(EVENT_TYPES.length);
  });

  it('fingerprints are the CRC-64-AVRO of the Avro specification', () => {
    // The specification's published values for the schemas "int" and "null".
    expect(rabinFingerprint('"int"').toString(16)).toBe('7275d51a3f395c8f');
    expect(rabinFingerprint('"null"').toString(16)).toBe('63dd24e7cc258f8a');
  });

  it('incompatible changes are rejected by the same check', () => {
    const v1 = catalog.events.get('customer.changed')!.versions[0]!.type;
    const rejected: [string, Schema, RegExp][] = [
      ['a required field without a default', withPayloadField({ name: 'segment', type: 'string' }), /no matching field for default-less .*segment/],
      ['a field changes type', withPayloadType('version', 'string'), /cannot read "int" as "string"/],
      ['a nullable field becomes required', withPayloadType('partner_id', 'long'), /cannot read/],
      ['an enum loses a symbol and has no default', withEnum('status', (e) => { e.symbols = ['lead', 'unknown']; delete e.default; }), /cannot read/],
    ];
    for (const [what, schema, reason] of rejected) {
      expect(incompatibility(parseSchema(schema), v1), what).toMatch(reason);
    }
    const accepted: [string, Schema][] = [
      ['an optional field with a default', withPayloadField({ name: 'segment', type: ['null', 'string'], default: null })],
      ['int widened to long', withPayloadType('version', 'long')],
      ['a required field made nullable', withPayloadType('customer_id', ['null', 'long'])],
      ['an enum gains a symbol', withEnum('change', (e) => { (e.symbols as string[]).push('merged'); })],
    ];
    for (const [what, schema] of accepted) expect(incompatibility(parseSchema(schema), v1), what).toBeUndefined();
  });

  it('enum defaults: a reader of v1 reads a symbol added later as "unknown"', () => {
    const v1 = catalog.events.get('customer.changed')!.type;
    const newer = parseSchema(withEnum('change', (e) => { (e.symbols as string[]).push('merged'); }));
    const value = v1.fromBuffer(v1.toBuffer(v1.fromBuffer(newer.toBuffer({
      event_id: '00000000-0000-4000-8000-000000000000', program_id: 1, occurred_at: 0, test: false,
      payload: {
        change: 'merged', customer_id: 1, program_id: 1, partner_id: null, partner_program_id: null, click_id: null,
        status: 'lead', provisional: false, test: false, signup_date: null, first_purchase_date: null, version: 1, updated_at: 0,
      },
    }), v1.createResolver(newer))));
    expect(value.payload.change).toBe('unknown');
  });

  it('releasing an incompatible version fails the catalog check, and no codec loads it', () => {
    const dir = scratchCatalog();
    release(dir, 'customer.changed', withPayloadField({ name: 'segment', type: 'string' }));
    const { problems } = inspectCatalog(dir);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/customer\.changed v1 .*cannot read it \(not backward compatible\): no matching field for default-less/);
    expect(() => createAvroCodec({ dir })).toThrow(/not backward compatible/);
  });

  it('editing a schema without releasing it, or editing a released one, fails the catalog check', () => {
    const edited = scratchCatalog();
    writeFileSync(join(edited, 'customer.changed.avsc'), JSON.stringify(withPayloadField({ name: 'segment', type: ['null', 'string'], default: null })));
    expect(inspectCatalog(edited).problems).toEqual([expect.stringMatching(/customer\.changed\.avsc differs from its latest released version .*history\/customer\.changed\.v2\.avsc/)]);
    const rewritten = scratchCatalog();
    writeFileSync(join(rewritten, 'history/customer.changed.v1.avsc'), JSON.stringify(withPayloadType('version', 'long')));
    expect(inspectCatalog(rewritten).problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/customer\.changed v1 .*fingerprint is [0-9a-f]{16}, catalog says 2dd97cd737430fbe/)]),
    );
  });

  it('after a compatible release, a consumer reads old messages with the new schema, and the header names each', () => {
    const dir = scratchCatalog();
    const newId = release(dir, 'customer.changed', withPayloadField({ name: 'segment', type: ['null', 'string'], default: null }));
    expect(inspectCatalog(dir).problems).toEqual([]);
    const before = createAvroCodec();
    const after = createAvroCodec({ dir });
    const row: EncodableRow = {
      event_id: '3f1c2b9a-7d4e-4f5a-9b6c-1d2e3f4a5b6c', program_id: 9, test: false, occurred_at: '2025-03-01T12:00:00.123456+00:00',
      payload: {
        change: 'lead', customer_id: 5, program_id: 9, partner_id: 2, partner_program_id: 3, click_id: 'c-1', status: 'lead',
        provisional: false, test: false, signup_date: '2025-03-01T12:00:00.123456+00:00', first_purchase_date: null, version: 1,
        updated_at: '2025-03-01T12:00:00.123456+00:00',
      },
    };
    const old = before.encode('customer.changed', row);
    const read = after.decode(old);
    expect(read).toMatchObject({ eventType: 'customer.changed', schemaId: 2, version: 1 });
    expect(read.value.payload).toEqual({ ...row.payload, signup_date: '2025-03-01T12:00:00.123456Z', updated_at: '2025-03-01T12:00:00.123456Z', segment: null });
    // Outbox rows written before the release (no segment) are encoded with the default.
    const fresh = after.encode('customer.changed', row);
    expect(fresh.readUInt32BE(1)).toBe(newId);
    expect(after.decode(fresh)).toMatchObject({ schemaId: newId, version: 2, value: { payload: { segment: null } } });
    expect(after.decode(after.encode('customer.changed', { ...row, payload: { ...row.payload, segment: 'vip' } })).value.payload.segment).toBe('vip');
    // A consumer that has not seen the release yet refuses the new id by name.
    expect(() => before.decode(fresh)).toThrow(`Unknown Avro schema id ${newId} in the message header`);
  });
});

describe('Avro wire format: the header names the schema', () => {
  const codec = createAvroCodec();
  const row: EncodableRow = {
    event_id: '6a1f4c2e-0b3d-4e5f-8a9b-0c1d2e3f4a5b', program_id: 3, test: true, occurred_at: new Date('2025-03-01T12:00:00.000Z'),
    payload: { tracking_log_id: 4, program_id: 3, event_type: 'click', entity_id: 'c-9', created_at: '2025-03-01T12:00:00.000001+00:00' },
  };

  it('is the Confluent framing: magic byte 0, the catalog id big-endian, then the Avro body', () => {
    const message = codec.encode('test_event.logged', row);
    const { schemaId, topic, subject } = codec.route('test_event.logged');
    expect(message[0]).toBe(0);
    expect(message.subarray(1, 5)).toEqual(Buffer.from([0, 0, 0, schemaId]));
    expect(codec.avroType('test_event.logged').fromBuffer(message.subarray(5)).payload.created_at).toBe(1_740_830_400_000_001);
    expect({ topic, subject }).toEqual({ topic: 'tracking.test-events.v1', subject: 'tracking.test-events.v1-tracking.events.TestEventLogged' });
  });

  it('an unknown schema id, a foreign message or a damaged body fails with a clear error', () => {
    const message = codec.encode('test_event.logged', row);
    const unknown = Buffer.from(message);
    unknown.writeUInt32BE(999_999, 1);
    expect(() => codec.decode(unknown)).toThrow(/^Unknown Avro schema id 999999 in the message header: not in .*catalog\.json$/);
    expect(() => codec.decode(Buffer.from(JSON.stringify(row)))).toThrow('magic byte 0x7b, expected 0x00');
    expect(() => codec.decode(message.subarray(0, 3))).toThrow('3 bytes, shorter than the 5-byte Confluent header');
    expect(() => codec.decode(message.subarray(0, message.length - 2))).toThrow(/test_event\.logged event \(schema id \d+\) does not decode: truncated/);
    expect(() => codec.decode(Buffer.concat([message, Buffer.from([1])]))).toThrow('does not decode: trailing data');
  });
});

describe('Avro timestamps: microseconds, any offset in, UTC out', () => {
  // Years 1717 to 2223: about 285 years either side of 1970 microseconds no longer fit a double exactly.
  const micros = fc.integer({ min: -8_000_000_000_000_000, max: 8_000_000_000_000_000 });

  it('format and parse are inverse, and agree with Date to the millisecond', () => {
    fc.assert(
      fc.property(micros, (us) => {
        const text = formatTimestampMicros(us);
        expect(parseTimestampMicros(text)).toBe(us);
        expect(text.slice(0, 23)).toBe(new Date(Math.floor(us / 1000)).toISOString().slice(0, 23));
      }),
      { numRuns: 2_000 },
    );
  });

  it('an offset shifts the instant; Postgres and JSON spellings of one instant agree', () => {
    fc.assert(
      fc.property(micros, fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }), (us, offset) => {
        const local = formatTimestampMicros(us + offset * 60_000_000).slice(0, -1);
        const sign = offset < 0 ? '-' : '+';
        const hh = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0');
        const mm = String(Math.abs(offset) % 60).padStart(2, '0');
        for (const text of [`${local}${sign}${hh}:${mm}`, `${local}${sign}${hh}${mm}`, `${local.replace('T', ' ')}${sign}${hh}:${mm}`]) {
          expect(parseTimestampMicros(text), text).toBe(us);
        }
      }),
      { numRuns: 1_000 },
    );
    expect(parseTimestampMicros('2025-03-01 12:00:00.5+00')).toBe(Date.UTC(2025, 2, 1, 12) * 1000 + 500_000);
    expect(parseTimestampMicros('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29) * 1000);
    expect(parseTimestampMicros('2025-03-01T12:00:00.123456000Z')).toBe(Date.UTC(2025, 2, 1, 12) * 1000 + 123_456);
  });

  it('refuses what is not an instant, or would lose precision', () => {
    for (const text of [
      '2025-03-01T12:00:00', '2025-03-01', '2025-02-29T00:00:00Z', '2025-13-01T00:00:00Z', '2025-03-01T24:00:00Z',
      '2025-03-01T12:00:60Z', '2025-03-01T12:00:00.Z', '2025-03-01T12:00:00.1234567Z', '2025-03-01T12:00:00Zjunk',
      '2025-03-01T12:00:00+0', '2025-03-01T12:00:00+24:00', '2025-03-01X12:00:00Z', '+2025-03-01T12:00:00Z', 'infinity', '',
    ]) {
      expect(parseTimestampMicros(text), text).toBeUndefined();
    }
  });
});
