/**
 * The event contract: every event type the tracking state emits, the payload each carries, and the
 * builders the domain calls to put one in the outbox. Everything else about events is checked
 * against this file:
 *
 *   - schemas/avro/<type>.avsc has exactly the payload's fields (tests/schemas/event-contract.test.ts);
 *   - click.recorded and test_event.logged are built in SQL, inside the statement that writes the
 *     click or the tracking-log entry (one round trip on the hot path, docs/decisions/layout.md): the same
 *     test runs those statements and compares the stored payloads with PAYLOAD_FIELDS;
 *   - the loader (processors/loader/loader.ts) has one mapper per type, `{ [T in EventType]: ... }`, reading
 *     only the payload's fields; the test checks the ClickHouse tables have the columns they write.
 *
 * Imports nothing: the HTTP app (ingest/) and the stream processors (processors/) both depend on it.
 */

/** The event types, in catalog order. */
export const EVENT_TYPES = [
  'click.recorded',
  'customer.changed',
  'sale.recorded',
  'sale.status_changed',
  'commission.created',
  'commission.reversed',
  'platform_fee.created',
  'platform_fee.reversed',
  'partner_program.changed',
  'test_event.logged',
  'sale.partially_refunded',
  'commission.adjusted',
  'platform_fee.adjusted',
  'ledger_entry.recorded',
  'commission.approved',
  'payout.created',
  'payout.paid',
  'payout.canceled',
  // Issue 30: a daily exchange rate stored (program_id 0 in the envelope: rates belong to no program).
  'fx_rate.recorded',
  // Issue 31: an application to a program, and its approval by an owner.
  'partner.applied',
  'partner.approved',
  // Issue 31: a commission held for review (a fraud rule flagged it, or its partner was banned).
  'commission.held',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

// ---------------------------------------------------------------------------------------------
// Payloads, as the domain writes them (timestamps are Dates here; JSON text once in the outbox).

export interface ClickRecordedPayload {
  click_id: string;
  program_id: number;
  partner_id: number | null;
  referral_link_id: number;
  test: boolean;
  created_at: Date;
  /** The affiliate_url's sub-ids, at most 100 characters each; null when absent (v2). */
  sub1: string | null;
  sub2: string | null;
  sub3: string | null;
  sub4: string | null;
  sub5: string | null;
}

export type CustomerChange = 'lead' | 'provisional' | 'settled' | 'conversion';

export interface CustomerChangedPayload {
  change: CustomerChange;
  customer_id: number;
  program_id: number;
  partner_id: number | null;
  partner_program_id: number | null;
  click_id: string | null;
  status: 'lead' | 'conversion';
  provisional: boolean;
  test: boolean;
  signup_date: Date | null;
  first_purchase_date: Date | null;
  /** Grows by one with every change: consumers keep the highest. */
  version: number;
  updated_at: Date;
}

export type SaleStatus = 'paid' | 'refunded' | 'chargeback';

export interface SaleRecordedPayload {
  sale_id: string;
  transaction_id: string;
  program_id: number;
  customer_id: number | null;
  partner_id: number | null;
  amount_cents: number;
  currency: string;
  occurred_at: Date;
  status: SaleStatus;
  is_recurring: boolean;
  test: boolean;
  created_at: Date;
}

export interface SaleStatusChangedPayload {
  sale_id: string;
  transaction_id: string;
  program_id: number;
  status: SaleStatus;
  reason: 'refund' | 'chargeback';
  refund_id: string;
  changed_at: Date;
}

/**
 * A partial refund of a paid sale (processor refunds only; the sale stays paid). refunded_cents is
 * the sale's refunded total after it and grows with every partial refund of the sale: consumers
 * keep the highest.
 */
export interface SalePartiallyRefundedPayload {
  partial_refund_id: string;
  sale_id: string;
  transaction_id: string;
  program_id: number;
  /** This refund's share of the sale amount. */
  amount_cents: number;
  refunded_cents: number;
  currency: string;
  refunded_at: Date;
}

/** A commission's lifecycle (partner-program.md, "Commission lifecycle"). */
export type CommissionStatus = 'pending' | 'held' | 'approved' | 'processing' | 'paid' | 'reversed';

export interface CommissionPayload {
  commission_id: string;
  sale_id: string;
  program_id: number;
  partner_id: number;
  amount_cents: number;
  currency: string;
  status: CommissionStatus;
  created_at: Date;
}

export interface PlatformFeePayload {
  platform_fee_id: string;
  commission_id: string;
  sale_id: string;
  program_id: number;
  amount_cents: number;
  currency: string;
  created_at: Date;
}

/**
 * A commission or fee made smaller by a partial refund: the whole record, amount_cents what is left,
 * reversed_cents what partial refunds took off so far (grows with every adjustment).
 */
export interface CommissionAdjustedPayload extends CommissionPayload {
  reversed_cents: number;
}
export interface PlatformFeeAdjustedPayload extends PlatformFeePayload {
  reversed_cents: number;
}

/** The ledger's kinds of entry (partner-program.md, "Ledger"). */
export type LedgerKind = 'commission' | 'adjustment' | 'reversal' | 'clawback' | 'payout' | 'manual';

/** One entry of a partner's append-only ledger (issue 34): every money movement is one. */
export interface LedgerEntryRecordedPayload {
  entry_id: number;
  program_id: number;
  partner_id: number;
  kind: LedgerKind;
  /** Signed minor units: commission adds, manual either way, the rest take off. */
  amount_minor: number;
  currency: string;
  commission_id: string | null;
  sale_id: string | null;
  payout_id: string | null;
  /** Unique: one cause never makes two entries. */
  cause: string;
  rule_version: number | null;
  reason: string | null;
  created_at: Date;
  available_at: Date;
}

/**
 * A commission reversed (its sale refunded or charged back, or an owner rejected it), with the
 * ledger's reversal entry of it: that entry travels here, not as a ledger_entry.recorded of its own
 * (docs/decisions/ledger.md, "Events and the warehouse"). Null when nothing was left to take back.
 */
export interface CommissionReversedPayload extends CommissionPayload {
  ledger_entry: LedgerEntryRecordedPayload | null;
}

/** A commission became payable: its hold ended (hold_end) or an owner approved it (owner, with a reason). */
export interface CommissionApprovedPayload extends Omit<CommissionPayload, 'status' | 'created_at'> {
  approved_at: Date;
  by: 'hold_end' | 'owner';
  reason: string | null;
}

/**
 * A commission held for review (issue 31, docs/decisions/fraud-review.md): flagged by fraud rules when
 * created, or held by its partner's ban. `reasons`: the rules or the cause; the evidence is not in
 * the event (it may name a customer's email): GET .../reviews reads it.
 */
export interface CommissionHeldPayload extends Omit<CommissionPayload, 'status' | 'created_at'> {
  held_at: Date;
  reasons: string[];
}

/** A payout's state (partner-program.md, "Payouts"): pending until marked paid or canceled. */
export type PayoutStatus = 'pending' | 'paid' | 'canceled';

/** A payout, whole (payout.created, payout.paid, payout.canceled). */
export interface PayoutPayload {
  payout_id: string;
  program_id: number;
  partner_id: number;
  currency: string;
  amount_minor: number;
  status: PayoutStatus;
  cutoff: Date;
  commission_ids: string[];
  clawback_entry_ids: number[];
  manual_entry_ids: number[];
  reference: string | null;
  created_at: Date;
  paid_at: Date | null;
  canceled_at: Date | null;
}

export interface PartnerProgramChangedPayload {
  partner_program_id: number;
  partner_id: number;
  program_id: number;
  status: string;
  created_at: Date;
  updated_at: Date;
}

/** An application (issue 31): a pending partner-program record with what the applicant sent. */
export interface PartnerAppliedPayload {
  partner_program_id: number;
  partner_id: number;
  program_id: number;
  name: string;
  email: string;
  website: string | null;
  created_at: Date;
}

/** A partner approved in a program by an owner (issue 31). */
export interface PartnerApprovedPayload {
  partner_program_id: number;
  partner_id: number;
  program_id: number;
  name: string;
  email: string | null;
  approved_at: Date;
}

/**
 * A daily exchange rate stored (issue 30, docs/decisions/currencies.md): per_eur units of currency
 * buy one euro on day. workspace_id 0: the operator's rates; otherwise that workspace's own.
 */
export interface FxRateRecordedPayload {
  workspace_id: number;
  currency: string;
  /** YYYY-MM-DD, the day the rate was published for. */
  day: string;
  /** Decimal text, exact as stored (up to 10 decimals). */
  per_eur: string;
  created_at: Date;
}

export interface TestEventLoggedPayload {
  tracking_log_id: number;
  program_id: number;
  /** What was logged in test mode. */
  event_type: 'click' | 'lead' | 'sale';
  entity_id: string;
  created_at: Date;
}

export interface EventPayloads {
  'click.recorded': ClickRecordedPayload;
  'customer.changed': CustomerChangedPayload;
  'sale.recorded': SaleRecordedPayload;
  'sale.status_changed': SaleStatusChangedPayload;
  'commission.created': CommissionPayload;
  'commission.reversed': CommissionReversedPayload;
  'platform_fee.created': PlatformFeePayload;
  'platform_fee.reversed': PlatformFeePayload;
  'partner_program.changed': PartnerProgramChangedPayload;
  'test_event.logged': TestEventLoggedPayload;
  'sale.partially_refunded': SalePartiallyRefundedPayload;
  'commission.adjusted': CommissionAdjustedPayload;
  'platform_fee.adjusted': PlatformFeeAdjustedPayload;
  'ledger_entry.recorded': LedgerEntryRecordedPayload;
  'commission.approved': CommissionApprovedPayload;
  'payout.created': PayoutPayload;
  'payout.paid': PayoutPayload;
  'payout.canceled': PayoutPayload;
  'fx_rate.recorded': FxRateRecordedPayload;
  'partner.applied': PartnerAppliedPayload;
  'partner.approved': PartnerApprovedPayload;
  'commission.held': CommissionHeldPayload;
}

// Breaks the build when EVENT_TYPES and EventPayloads disagree.
const _everyTypeHasAPayload: Record<EventType, unknown> = {} as EventPayloads;
const _everyPayloadHasAType: Record<keyof EventPayloads, unknown> = {} as Record<EventType, unknown>;

const fields = <P>(f: Record<keyof P, true>) => f;
const commissionFields = fields<CommissionPayload>({
  commission_id: true, sale_id: true, program_id: true, partner_id: true, amount_cents: true, currency: true, status: true, created_at: true,
});
const payoutFields = fields<PayoutPayload>({
  payout_id: true, program_id: true, partner_id: true, currency: true, amount_minor: true, status: true, cutoff: true, commission_ids: true,
  clawback_entry_ids: true, manual_entry_ids: true, reference: true, created_at: true, paid_at: true, canceled_at: true,
});
const feeFields = fields<PlatformFeePayload>({
  platform_fee_id: true, commission_id: true, sale_id: true, program_id: true, amount_cents: true, currency: true, created_at: true,
});

/**
 * Each payload's field names at run time, for the checks against the Avro schemas and the SQL-built
 * payloads. The type makes the list exact: a missing field is an error, an extra one too.
 */
export const PAYLOAD_FIELDS: { readonly [T in EventType]: Record<keyof EventPayloads[T], true> } = {
  'click.recorded': {
    click_id: true, program_id: true, partner_id: true, referral_link_id: true, test: true, created_at: true,
    sub1: true, sub2: true, sub3: true, sub4: true, sub5: true,
  },
  'customer.changed': {
    change: true, customer_id: true, program_id: true, partner_id: true, partner_program_id: true, click_id: true, status: true,
    provisional: true, test: true, signup_date: true, first_purchase_date: true, version: true, updated_at: true,
  },
  'sale.recorded': {
    sale_id: true, transaction_id: true, program_id: true, customer_id: true, partner_id: true, amount_cents: true, currency: true,
    occurred_at: true, status: true, is_recurring: true, test: true, created_at: true,
  },
  'sale.status_changed': { sale_id: true, transaction_id: true, program_id: true, status: true, reason: true, refund_id: true, changed_at: true },
  'commission.created': commissionFields,
  'commission.reversed': { ...commissionFields, ledger_entry: true },
  'platform_fee.created': feeFields,
  'platform_fee.reversed': feeFields,
  'partner_program.changed': { partner_program_id: true, partner_id: true, program_id: true, status: true, created_at: true, updated_at: true },
  'test_event.logged': { tracking_log_id: true, program_id: true, event_type: true, entity_id: true, created_at: true },
  'sale.partially_refunded': {
    partial_refund_id: true, sale_id: true, transaction_id: true, program_id: true, amount_cents: true, refunded_cents: true,
    currency: true, refunded_at: true,
  },
  'commission.adjusted': { ...commissionFields, reversed_cents: true },
  'platform_fee.adjusted': { ...feeFields, reversed_cents: true },
  'ledger_entry.recorded': {
    entry_id: true, program_id: true, partner_id: true, kind: true, amount_minor: true, currency: true, commission_id: true, sale_id: true,
    payout_id: true, cause: true, rule_version: true, reason: true, created_at: true, available_at: true,
  },
  'commission.approved': {
    commission_id: true, sale_id: true, program_id: true, partner_id: true, amount_cents: true, currency: true, approved_at: true, by: true,
    reason: true,
  },
  'payout.created': payoutFields,
  'payout.paid': payoutFields,
  'payout.canceled': payoutFields,
  'fx_rate.recorded': { workspace_id: true, currency: true, day: true, per_eur: true, created_at: true },
  'partner.applied': { partner_program_id: true, partner_id: true, program_id: true, name: true, email: true, website: true, created_at: true },
  'partner.approved': { partner_program_id: true, partner_id: true, program_id: true, name: true, email: true, approved_at: true },
  'commission.held': {
    commission_id: true, sale_id: true, program_id: true, partner_id: true, amount_cents: true, currency: true, held_at: true, reasons: true,
  },
};

// ---------------------------------------------------------------------------------------------
// The event on its way: what the domain appends, the outbox row the relay reads, what a consumer decodes.

/** An event for the outbox, its payload the one its type carries. */
export type OutboxEvent<T extends EventType = EventType> = {
  [K in T]: {
    type: K;
    /** The entity whose events must stay in order (customer, sale, click...): the Kafka key. */
    key: string;
    programId: number;
    test: boolean;
    occurredAt: Date;
    payload: EventPayloads[K];
  };
}[T];

/** An outbox row as the relay reads it (schemas/postgres: outbox). */
export interface OutboxRow {
  id: number;
  event_id: string;
  /** As stored: the codec refuses a type the catalog does not know (the row is dead-lettered). */
  event_type: string;
  aggregate_key: string;
  program_id: number;
  test: boolean;
  /** ISO 8601 text with microseconds: a JS Date would cut the time to milliseconds. */
  occurred_at: string;
  payload: Record<string, unknown>;
}

/** An event's envelope and payload: what the Avro codec encodes from a row and decodes back. */
export interface EventValue {
  event_id: string;
  program_id: number;
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ` as decoded; the outbox row's text as encoded. */
  occurred_at: string;
  test: boolean;
  payload: Record<string, unknown>;
}

/** An event read from the log. */
export interface DecodedEvent {
  eventType: EventType;
  /** The header's schema id and its version (Avro); absent for a log that carries no schema. */
  schemaId?: number;
  version?: number;
  value: EventValue;
}

// ---------------------------------------------------------------------------------------------
// Builders: the domain passes its rows (any object with these fields) and gets the event.

export function customerChanged(
  c: Omit<CustomerChangedPayload, 'change' | 'customer_id'> & { id: number },
  change: CustomerChange,
): OutboxEvent<'customer.changed'> {
  return {
    type: 'customer.changed',
    key: `customer:${c.id}`,
    programId: c.program_id,
    test: c.test,
    occurredAt: c.updated_at,
    payload: {
      change,
      customer_id: c.id,
      program_id: c.program_id,
      partner_id: c.partner_id,
      partner_program_id: c.partner_program_id,
      click_id: c.click_id,
      status: c.status,
      provisional: c.provisional,
      test: c.test,
      signup_date: c.signup_date,
      first_purchase_date: c.first_purchase_date,
      version: c.version,
      updated_at: c.updated_at,
    },
  };
}

export function partnerProgramChanged(
  junction: Omit<PartnerProgramChangedPayload, 'partner_program_id'> & { id: number },
): OutboxEvent<'partner_program.changed'> {
  return {
    type: 'partner_program.changed',
    key: `partner_program:${junction.id}`,
    programId: junction.program_id,
    test: false,
    occurredAt: junction.updated_at,
    payload: {
      partner_program_id: junction.id,
      partner_id: junction.partner_id,
      program_id: junction.program_id,
      status: junction.status,
      created_at: junction.created_at,
      updated_at: junction.updated_at,
    },
  };
}

/** An application's event (issue 31), keyed like the partner-program record's changes so they stay in order. */
export function partnerApplied(p: PartnerAppliedPayload): OutboxEvent<'partner.applied'> {
  return { type: 'partner.applied', key: `partner_program:${p.partner_program_id}`, programId: p.program_id, test: false, occurredAt: p.created_at, payload: p };
}

/** An approval's event (issue 31). */
export function partnerApproved(p: PartnerApprovedPayload): OutboxEvent<'partner.approved'> {
  return { type: 'partner.approved', key: `partner_program:${p.partner_program_id}`, programId: p.program_id, test: false, occurredAt: p.approved_at, payload: p };
}

/** A stored exchange rate's event (issue 30): program 0, keyed per workspace and currency so a currency's days stay in order. */
export function fxRateRecorded(p: FxRateRecordedPayload): OutboxEvent<'fx_rate.recorded'> {
  return { type: 'fx_rate.recorded', key: `fx_rate:${p.workspace_id}:${p.currency}`, programId: 0, test: false, occurredAt: p.created_at, payload: p };
}
