/**
 * Mappers: an event's rows in the warehouse, table by table. The event table's row; the
 * current-state row where the event changes state; the performance fact where it changes a
 * dashboard figure (rollup.ts). A field that does not fit its column throws (field-readers.ts).
 *
 * Rows are put together with literals and Object.assign, never an object spread: in V8 a spread
 * followed by more properties costs over a microsecond, Object.assign a few dozen nanoseconds, and
 * a loader maps tens of thousands of events a second.
 */
import type { DecodedEvent, EventPayloads, EventType } from '../../schemas/event-contract.js';
import { bool, fail, hourOf, int, intList, intOrNull, MappingError, str, strOrNull, time, timeOrNull, type Row, uuid, uuidList, uuidOrNull } from './field-readers.js';
import { fact, FACTS } from './rollup.js';

/**
 * The versions of a commission (commissions_current) and of the sales and commissions facts
 * (0005_partial_refunds.sql): created 1, a partial refund 2 + the cents taken off so far (which only
 * grow), and the full refund, chargeback or reversal that ends them above any of those.
 */
const CREATED = 1;
const adjusted = (centsTakenOff: number) => 2 + centsTakenOff;
const ENDED = Number.MAX_SAFE_INTEGER;

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

/**
 * A sales_current row: each event of a sale writes what it knows, the rest as this empty row has it,
 * and the table's merge (max() per column) keeps every event's part. One list of columns for all.
 */
const EMPTY_SALE = {
  transaction_id: '', customer_id: null, partner_id: null, amount_cents: 0, refunded_cents: 0, currency: '', occurred_at: null,
  is_recurring: false, recorded_status: '', changed_status: '', status_changed_at: null, commission_cents: 0,
};
const saleRow = (e: Envelope, saleId: string, known: Row): [string, Row] => ['sales_current', { program_id: e.program_id, sale_id: saleId, ...EMPTY_SALE, test: e.test, ...known }];

const FX_DAY = /^\d{4}-\d{2}-\d{2}$/;
const FX_RATE = /^\d{1,14}(\.\d{1,10})?$/;
const fxRate = (p: Received<'fx_rate.recorded'>) => {
  const day = str(p, 'day');
  const perEur = str(p, 'per_eur');
  if (!FX_DAY.test(day)) fail('day', 'YYYY-MM-DD', day);
  if (!FX_RATE.test(perEur)) fail('per_eur', 'a decimal of up to 14 digits and 10 decimals', perEur);
  return { workspace_id: int(p, 'workspace_id'), currency: str(p, 'currency'), day, per_eur: perEur, created_at: time(p, 'created_at') };
};

/** commission.held's reasons as an Array(String) cell: rule or cause names, so nothing in them needs quoting. */
const REASON = /^[a-z0-9_]{1,64}$/;
const reasonList = (v: unknown): string => {
  if (!Array.isArray(v)) return fail('reasons', 'an array', v);
  return `[${v.map((r, i) => (typeof r === 'string' && REASON.test(r) ? `'${r}'` : fail(`reasons[${i}]`, 'a rule name', r))).join(',')}]`;
};

/** A ledger entry's warehouse row: a ledger_entry.recorded's payload, or the one a commission.reversed carries. */
const ledgerEntry = (p: Received<'ledger_entry.recorded'>) => ({
  entry_id: int(p, 'entry_id'),
  partner_id: int(p, 'partner_id'),
  kind: str(p, 'kind'),
  amount_minor: int(p, 'amount_minor'),
  currency: str(p, 'currency'),
  commission_id: uuidOrNull(p, 'commission_id'),
  sale_id: uuidOrNull(p, 'sale_id'),
  payout_id: uuidOrNull(p, 'payout_id'),
  cause: str(p, 'cause'),
  rule_version: intOrNull(p, 'rule_version'),
  reason: strOrNull(p, 'reason'),
  created_at: time(p, 'created_at'),
  available_at: time(p, 'available_at'),
});

/** An event's rows, each with its table. */
export type Mapped = Array<[table: string, row: Row]>;

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

/** A payout as payout.created, payout.paid and payout.canceled carry it (0006_ledger.sql). */
const payout = (p: Received<'payout.created' | 'payout.paid' | 'payout.canceled'>) => ({
  payout_id: uuid(p, 'payout_id'),
  partner_id: int(p, 'partner_id'),
  currency: str(p, 'currency'),
  amount_minor: int(p, 'amount_minor'),
  status: str(p, 'status'),
  cutoff: time(p, 'cutoff'),
  commission_ids: uuidList(p, 'commission_ids'),
  clawback_entry_ids: intList(p, 'clawback_entry_ids'),
  manual_entry_ids: intList(p, 'manual_entry_ids'),
  reference: strOrNull(p, 'reference'),
  created_at: time(p, 'created_at'),
  paid_at: timeOrNull(p, 'paid_at'),
  canceled_at: timeOrNull(p, 'canceled_at'),
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
        // v1 events (no sub-ids) decode with the reader schema's defaults: null.
        sub1: strOrNull(p, 'sub1'),
        sub2: strOrNull(p, 'sub2'),
        sub3: strOrNull(p, 'sub3'),
        sub4: strOrNull(p, 'sub4'),
        sub5: strOrNull(p, 'sub5'),
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
      saleRow(e, sale.sale_id, { ...sale, occurred_at: occurredAt, recorded_status: status }),
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
      saleRow(e, change.sale_id, { transaction_id: change.transaction_id, changed_status: change.status, status_changed_at: change.changed_at }),
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
      saleRow(e, refund.sale_id, { transaction_id: refund.transaction_id, refunded_cents: refund.refunded_cents }),
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
      // The commission as first earned, on its sale's row (the what-if simulation's, issue 30).
      saleRow(e, c.sale_id, { commission_cents: c.amount_cents }),
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
    // The reversal's ledger entry travels in this event (a row of the ledger's table under this event's id);
    // versions before 3 carried none (their entry came as a ledger_entry.recorded).
    const entry = p.ledger_entry ?? null;
    if (entry !== null && typeof entry !== 'object') fail('ledger_entry', 'a ledger entry or null', entry);
    return [
      ['commission_reversed', eventRow(e, c)],
      ['commissions_current', Object.assign({ program_id: e.program_id }, c, { status: 'reversed', reversed_at: e.occurred_at, state_version: ENDED })],
      commissionFact(e, c, false, ENDED),
      ...(entry === null ? [] : ([['ledger_entry_recorded', eventRow(e, ledgerEntry(entry as Received<'ledger_entry.recorded'>))]] as Mapped)),
    ];
  },

  'platform_fee.created': (e, p) => [['platform_fee_created', eventRow(e, fee(p))]],
  'platform_fee.reversed': (e, p) => [['platform_fee_reversed', eventRow(e, fee(p))]],
  'platform_fee.adjusted': (e, p) => [['platform_fee_adjusted', eventRow(e, fee(p), { reversed_cents: int(p, 'reversed_cents') })]],

  // The ledger and payouts (issue 34): event tables only; the dashboard's figures do not read them.
  'ledger_entry.recorded': (e, p) => [['ledger_entry_recorded', eventRow(e, ledgerEntry(p))]],
  'commission.approved': (e, p) => [
    [
      'commission_approved',
      eventRow(e, {
        commission_id: uuid(p, 'commission_id'),
        sale_id: uuid(p, 'sale_id'),
        partner_id: int(p, 'partner_id'),
        amount_cents: int(p, 'amount_cents'),
        currency: str(p, 'currency'),
        approved_at: time(p, 'approved_at'),
        approved_by: str(p, 'by'),
        reason: strOrNull(p, 'reason'),
      }),
    ],
  ],
  // Issue 31: a commission held for review; analytics.commissions reads it (0016_commission_held.sql).
  'commission.held': (e, p) => [
    [
      'commission_held',
      eventRow(e, {
        commission_id: uuid(p, 'commission_id'),
        sale_id: uuid(p, 'sale_id'),
        partner_id: int(p, 'partner_id'),
        amount_cents: int(p, 'amount_cents'),
        currency: str(p, 'currency'),
        held_at: time(p, 'held_at'),
        reasons: reasonList(p.reasons),
      }),
    ],
  ],
  'payout.created': (e, p) => [['payout_created', eventRow(e, payout(p))]],
  'payout.paid': (e, p) => [['payout_paid', eventRow(e, payout(p))]],
  'payout.canceled': (e, p) => [['payout_canceled', eventRow(e, payout(p))]],

  // Issue 30: a stored exchange rate; the converted totals read it at query time (queries/reporting-totals.ts).
  'fx_rate.recorded': (e, p) => [['fx_rate_recorded', eventRow(e, fxRate(p))]],

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

  // Issue 31: when an application arrived and when it was approved (0012_partner_applications.sql);
  // the record's state is partner_program.changed's. The applicant's name and email stay in Postgres.
  'partner.applied': (e, p) => [
    ['partner_applied', eventRow(e, { partner_program_id: int(p, 'partner_program_id'), partner_id: int(p, 'partner_id'), created_at: time(p, 'created_at') })],
  ],
  'partner.approved': (e, p) => [
    ['partner_approved', eventRow(e, { partner_program_id: int(p, 'partner_program_id'), partner_id: int(p, 'partner_id'), approved_at: time(p, 'approved_at') })],
  ],

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
export const EVENT_TABLES = [
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
  'ledger_entry_recorded',
  'commission_approved',
  'commission_held',
  'payout_created',
  'payout_paid',
  'payout_canceled',
  'fx_rate_recorded',
  'partner_applied',
  'partner_approved',
] as const;
export const STATE_TABLES = ['customers_current', 'sales_current', 'commissions_current'] as const;

export const WAREHOUSE_TABLES = [...EVENT_TABLES, ...STATE_TABLES, FACTS, 'performance_hourly'] as const;

/** The warehouse rows of one event; throws (a MappingError) when the event does not fit them. */
export function eventRows(event: DecodedEvent): Mapped {
  // The type comes off the wire: a message can name one this build does not know.
  const mapper = (MAPPERS as Partial<Record<string, (e: Envelope, p: Row) => Mapped>>)[event.eventType];
  if (!mapper) throw new MappingError(`no warehouse table for event type ${JSON.stringify(event.eventType)}`);
  const payload = payloadOf(event);
  return mapper(envelope(event, payload), payload);
}
