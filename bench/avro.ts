/**
 * Avro vs JSON per event (npm run bench:avro). Not a test: it prints figures and asserts nothing.
 *
 * For each event kind, one outbox row shaped like the service writes it is encoded and decoded N
 * times with the codec the relay uses (processors/avro/codec.ts: row to Avro value, Confluent
 * header, Avro binary; and back, timestamps as ISO strings), and with JSON.stringify/JSON.parse of
 * the same row. The `avsc` columns time avsc alone (writing the ready Avro value into a buffer,
 * reading it back), to show what the strict row conversion, the header and the copy cost on top.
 * Single-threaded, a few seconds in all.
 *
 * Knobs: BENCH_AVRO_N (iterations per measurement, default 50000).
 */
import type { EventType } from '../schemas/event-contract.js';
import { createAvroCodec, type EncodableRow } from '../processors/avro/codec.js';

const N = Number(process.env.BENCH_AVRO_N ?? 50_000);
if (!Number.isInteger(N) || N < 1) throw new Error('BENCH_AVRO_N must be a positive integer');
const WARMUP = Math.min(N, 5_000);

const at = '2025-03-01T12:34:56.123456+00:00';
const uuid = (n: number) => `3f1c2b9a-7d4e-4f5a-9b6c-${String(n).padStart(12, '0')}`;
const envelope = (type: EventType, n: number, test = false) => ({
  event_id: uuid(n), event_type: type, aggregate_key: `sale:${uuid(100)}`, program_id: 1042, test, occurred_at: at,
});
const commission = { commission_id: uuid(101), sale_id: uuid(100), program_id: 1042, partner_id: 77, amount_cents: 1_235, currency: 'EUR', created_at: at };
const fee = { platform_fee_id: uuid(102), commission_id: uuid(101), sale_id: uuid(100), program_id: 1042, amount_cents: 247, currency: 'EUR', created_at: at };

const payout = (status: string) => ({
  payout_id: uuid(105), program_id: 1042, partner_id: 77, currency: 'EUR', amount_minor: 12_350, status, cutoff: at,
  commission_ids: Array.from({ length: 10 }, (_, i) => uuid(300 + i)), clawback_entry_ids: [90_002], manual_entry_ids: [],
  reference: null, created_at: at, paid_at: null, canceled_at: null,
});

const samples: Record<EventType, EncodableRow> = {
  'click.recorded': {
    ...envelope('click.recorded', 1),
    payload: {
      click_id: uuid(200), program_id: 1042, partner_id: 77, referral_link_id: 88, test: false, created_at: at,
      sub1: 'newsletter', sub2: null, sub3: null, sub4: null, sub5: null,
    },
  },
  'customer.changed': {
    ...envelope('customer.changed', 2),
    payload: {
      change: 'conversion', customer_id: 5_501, program_id: 1042, partner_id: 77, partner_program_id: 91, click_id: uuid(200),
      status: 'conversion', provisional: false, test: false, signup_date: at, first_purchase_date: at, version: 2, updated_at: at,
    },
  },
  'sale.recorded': {
    ...envelope('sale.recorded', 3),
    payload: {
      sale_id: uuid(100), transaction_id: 'pi_3OqXk2LkdIwHu7ix0d4Zx1aB', program_id: 1042, customer_id: 5_501, partner_id: 77,
      amount_cents: 12_345, currency: 'EUR', occurred_at: at, status: 'paid', is_recurring: false, test: false, created_at: at,
    },
  },
  'sale.status_changed': {
    ...envelope('sale.status_changed', 4),
    payload: {
      sale_id: uuid(100), transaction_id: 'pi_3OqXk2LkdIwHu7ix0d4Zx1aB', program_id: 1042, status: 'refunded', reason: 'refund',
      refund_id: uuid(103), changed_at: at,
    },
  },
  'commission.created': { ...envelope('commission.created', 5), payload: { ...commission, status: 'pending' } },
  'commission.reversed': { ...envelope('commission.reversed', 6), payload: { ...commission, status: 'reversed', ledger_entry: null } },
  'platform_fee.created': { ...envelope('platform_fee.created', 7), payload: fee },
  'platform_fee.reversed': { ...envelope('platform_fee.reversed', 8), payload: fee },
  'partner_program.changed': {
    ...envelope('partner_program.changed', 9),
    payload: { partner_program_id: 91, partner_id: 77, program_id: 1042, status: 'approved', created_at: at, updated_at: at },
  },
  'test_event.logged': {
    ...envelope('test_event.logged', 10, true),
    payload: { tracking_log_id: 31, program_id: 1042, event_type: 'click', entity_id: uuid(200), created_at: at },
  },
  'sale.partially_refunded': {
    ...envelope('sale.partially_refunded', 11),
    payload: {
      partial_refund_id: uuid(104), sale_id: uuid(100), transaction_id: 'pi_3OqXk2LkdIwHu7ix0d4Zx1aB', program_id: 1042,
      amount_cents: 2_345, refunded_cents: 2_345, currency: 'EUR', refunded_at: at,
    },
  },
  'commission.adjusted': { ...envelope('commission.adjusted', 12), payload: { ...commission, status: 'pending', reversed_cents: 235 } },
  'platform_fee.adjusted': { ...envelope('platform_fee.adjusted', 13), payload: { ...fee, reversed_cents: 47 } },
  'ledger_entry.recorded': {
    ...envelope('ledger_entry.recorded', 14),
    payload: {
      entry_id: 90_001, program_id: 1042, partner_id: 77, kind: 'commission', amount_minor: 1_235, currency: 'EUR', commission_id: uuid(101),
      sale_id: uuid(100), payout_id: null, cause: `sale:${uuid(100)}`, rule_version: null, reason: null, created_at: at, available_at: at,
    },
  },
  'commission.approved': {
    ...envelope('commission.approved', 15),
    payload: {
      commission_id: uuid(101), sale_id: uuid(100), program_id: 1042, partner_id: 77, amount_cents: 1_235, currency: 'EUR', approved_at: at,
      by: 'hold_end', reason: null,
    },
  },
  'payout.created': { ...envelope('payout.created', 16), payload: payout('pending') },
  'payout.paid': { ...envelope('payout.paid', 17), payload: { ...payout('paid'), reference: 'PP-2025-03-0001', paid_at: at } },
  'payout.canceled': { ...envelope('payout.canceled', 18), payload: { ...payout('canceled'), canceled_at: at } },
  'fx_rate.recorded': {
    ...envelope('fx_rate.recorded', 26),
    payload: { workspace_id: 0, currency: 'VND', day: '2026-11-26', per_eur: '27395.5', created_at: at },
  },
  'commission.held': {
    ...envelope('commission.held', 38),
    payload: {
      commission_id: uuid(101), sale_id: uuid(100), program_id: 1042, partner_id: 77, amount_cents: 1_235, currency: 'EUR', held_at: at,
      reasons: ['fast_conversion'],
    },
  },
  'partner.applied': {
    ...envelope('partner.applied', 40),
    payload: { partner_program_id: 9, partner_id: 77, program_id: 1042, name: 'Ada', email: 'ada@partners.example', website: null, created_at: at },
  },
  'partner.approved': {
    ...envelope('partner.approved', 41),
    payload: { partner_program_id: 9, partner_id: 77, program_id: 1042, name: 'Ada', email: 'ada@partners.example', approved_at: at },
  },
};

let sink = 0;
/** Nanoseconds per call of fn, after a warm-up. */
function time(fn: () => unknown): number {
  for (let i = 0; i < WARMUP; i += 1) if (fn()) sink += 1;
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i += 1) if (fn()) sink += 1;
  return Number(process.hrtime.bigint() - start) / N;
}

const codec = createAvroCodec();
const ns = (v: number) => v.toFixed(0).padStart(6);
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`.padStart(6);

console.log(`Avro (codec, Confluent framing) vs JSON.stringify/JSON.parse of the same outbox row; ${N} iterations each, Node ${process.version}`);
console.log('ns/op; ratio = Avro / JSON (below 1: Avro is faster or smaller)\n');
console.log(
  [
    'event'.padEnd(24), 'avro enc', 'json enc', ' ratio', 'avro dec', 'json dec', ' ratio', 'avsc enc', 'avsc dec', 'avro B', 'json B', ' ratio',
  ].join('  '),
);
const totals = { avroEnc: 0, jsonEnc: 0, avroDec: 0, jsonDec: 0, avroBytes: 0, jsonBytes: 0 };
for (const [eventType, row] of Object.entries(samples) as [EventType, EncodableRow][]) {
  const message = codec.encode(eventType, row);
  const json = JSON.stringify(row);
  const type = codec.avroType(eventType);
  const body = message.subarray(5);
  const value = type.fromBuffer(body);
  const scratch = Buffer.allocUnsafe(4096);
  const r = {
    avroEnc: time(() => codec.encode(eventType, row)),
    jsonEnc: time(() => JSON.stringify(row)),
    avroDec: time(() => codec.decode(message)),
    jsonDec: time(() => JSON.parse(json)),
    avscEnc: time(() => type.encode(value, scratch, 0)),
    avscDec: time(() => type.fromBuffer(body)),
    avroBytes: message.length,
    jsonBytes: Buffer.byteLength(json),
  };
  for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r[k];
  console.log(
    [
      eventType.padEnd(24), ns(r.avroEnc).padStart(8), ns(r.jsonEnc).padStart(8), ratio(r.avroEnc, r.jsonEnc),
      ns(r.avroDec).padStart(8), ns(r.jsonDec).padStart(8), ratio(r.avroDec, r.jsonDec),
      ns(r.avscEnc).padStart(8), ns(r.avscDec).padStart(8),
      String(r.avroBytes).padStart(6), String(r.jsonBytes).padStart(6), ratio(r.avroBytes, r.jsonBytes),
    ].join('  '),
  );
}
const kinds = Object.keys(samples).length;
console.log(
  `\nmean per event: encode ${ns(totals.avroEnc / kinds).trim()} ns Avro vs ${ns(totals.jsonEnc / kinds).trim()} ns JSON (${ratio(totals.avroEnc, totals.jsonEnc).trim()}), ` +
    `decode ${ns(totals.avroDec / kinds).trim()} vs ${ns(totals.jsonDec / kinds).trim()} ns (${ratio(totals.avroDec, totals.jsonDec).trim()}), ` +
    `size ${(totals.avroBytes / kinds).toFixed(0)} vs ${(totals.jsonBytes / kinds).toFixed(0)} bytes (${ratio(totals.avroBytes, totals.jsonBytes).trim()})`,
);
if (sink < 0) console.log(sink);
