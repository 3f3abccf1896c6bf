/**
 * The ledger (partner-program.md, "Ledger"): every money movement of a partner in a program is one
 * append-only entry with a unique cause (ledger_entries; the database refuses UPDATE, DELETE and
 * TRUNCATE). The functions of the sale, refund, lifecycle and payout paths write their entries in
 * SQL; this module reads a partner's ledger and writes an owner's manual entries.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import type { LedgerEntryRecordedPayload, LedgerKind } from '../../schemas/event-contract.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';

export type { LedgerKind };

/** A row of ledger_entries: the ledger_entry.recorded event's fields, under the row's own id. */
export type LedgerEntry = Omit<LedgerEntryRecordedPayload, 'entry_id'> & { id: number };

const ENTRY_COLUMNS = `e.id, e.program_id, e.partner_id, e.kind, e.amount_minor, e.currency, e.commission_id, e.sale_id, e.payout_id,
  e.cause, e.rule_version, e.reason, e.created_at, e.available_at`;

const q = {
  partner: sql('ledger.partner_in_program', `SELECT 1 AS found FROM partner_programs WHERE program_id = $1 AND partner_id = $2 LIMIT 1`),
  page: sql(
    'ledger.page',
    `SELECT ${ENTRY_COLUMNS}, e.created_at::text AS cursor_at
       FROM ledger_entries e
      WHERE e.program_id = $1 AND e.partner_id = $2 AND ($3::bigint IS NULL OR e.id > $3::bigint)
      ORDER BY e.id
      LIMIT $4`,
  ),
  byCause: sql('ledger.by_cause', `SELECT ${ENTRY_COLUMNS} FROM ledger_entries e WHERE e.cause = $1`),
  hasCurrency: sql(
    'ledger.partner_currency',
    `SELECT 1 AS found FROM ledger_entries WHERE program_id = $1 AND partner_id = $2 AND currency = $3 LIMIT 1`,
  ),
  // The entry and its event in one statement; a cause already taken writes nothing.
  manual: sql(
    'ledger.manual',
    `WITH e AS (
       INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, cause, reason)
       VALUES ($1, $2, 'manual', $3, $4, $5, $6)
       ON CONFLICT (cause) DO NOTHING
       RETURNING *
     ), o AS (
       INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
       SELECT 'ledger_entry.recorded', 'partner:' || e.partner_id, e.program_id, false, e.created_at, ledger_entry_event(ROW(e.*)::ledger_entries)
         FROM e
     )
     SELECT ${ENTRY_COLUMNS} FROM e`,
  ),
};

export const entryView = (e: LedgerEntry): LedgerEntry => ({
  ...e,
  id: Number(e.id),
  program_id: Number(e.program_id),
  partner_id: Number(e.partner_id),
  amount_minor: Number(e.amount_minor),
  rule_version: e.rule_version === null ? null : Number(e.rule_version),
});

/**
 * A page's query with each row's partner's name (partner_name, for the console's lists): the page
 * is selected as it was, then each of its few rows looks its partner up by primary key, so the name
 * changes neither the page's plan nor its rows. A sub-select rather than a join: a generic plan
 * that expects one row would join the page to a scan of every partner (docs/performance.md, "The
 * commission list's generic plan"). The caller orders the outer select again (`page.<column>`).
 */
export const withPartnerName = (page: string) =>
  `SELECT page.*, (SELECT pa.name FROM partners pa WHERE pa.id = page.partner_id) AS partner_name FROM (${page}) page`;

/** The partner has a record in the program (any state); otherwise partner_not_found, as for another workspace's id. */
export async function requirePartner(db: Queryable, programId: number, partnerId: number): Promise<void> {
  if (!(await db.one(q.partner, [programId, partnerId]))) throw refused({ reason: 'partner_not_found' });
}

export interface EntryPage {
  items: LedgerEntry[];
  /** The last item's place, when more follow. */
  next: { at: string; id: string } | undefined;
}

/** A partner's ledger, oldest first, a page at a time (after: the id of the last entry of the previous page). */
export async function ledgerPage(db: Queryable, programId: number, partnerId: number, after: number | undefined, limit: number): Promise<EntryPage> {
  await requirePartner(db, programId, partnerId);
  const rows = await db.many<LedgerEntry & { cursor_at: string }>(q.page, [programId, partnerId, after ?? null, limit + 1]);
  const kept = rows.slice(0, limit);
  const last = kept.at(-1);
  return {
    items: kept.map(({ cursor_at: _at, ...e }) => entryView(e)),
    next: rows.length > limit && last ? { at: last.cursor_at, id: String(last.id) } : undefined,
  };
}

export interface ManualEntryInput {
  programId: number;
  partnerId: number;
  amountMinor: number;
  currency: string;
  reason: string;
  /** The request's Idempotency-Key, or a fresh id: the same key makes one entry. */
  key: string;
}

/** The cause of a manual entry: the key is the caller's, scoped to the program and partner. */
export const manualCause = (i: Pick<ManualEntryInput, 'programId' | 'partnerId' | 'key'>) => `manual:${i.programId}:${i.partnerId}:${i.key}`;

const sameRequest = (e: LedgerEntry, i: ManualEntryInput) =>
  e.kind === 'manual' && Number(e.amount_minor) === i.amountMinor && e.currency === i.currency && e.reason === i.reason && Number(e.partner_id) === i.partnerId;

/**
 * An owner's manual entry (± amount, with a reason). The same key again with the same request
 * answers the first entry (replayed); with another request, idempotency_key_reused. A currency in
 * which the partner has no entry yet is currency_without_balance. Nothing is written on a refusal.
 */
export async function recordManualEntry(db: Database, input: ManualEntryInput, by: AuditContext): Promise<{ entry: LedgerEntry; replayed: boolean }> {
  const cause = manualCause(input);
  const answer = (e: LedgerEntry, replayed: boolean) => {
    if (!sameRequest(e, input)) throw refused({ reason: 'idempotency_key_reused' });
    return { entry: entryView(e), replayed };
  };
  return db.transaction(async (tx) => {
    await requirePartner(tx, input.programId, input.partnerId);
    const earlier = await tx.one<LedgerEntry>(q.byCause, [cause]);
    if (earlier) return answer(earlier, true);
    if (!(await tx.one(q.hasCurrency, [input.programId, input.partnerId, input.currency]))) {
      throw refused({ reason: 'currency_without_balance', currency: input.currency });
    }
    const written = await tx.one<LedgerEntry>(q.manual, [input.programId, input.partnerId, input.amountMinor, input.currency, cause, input.reason]);
    if (written) {
      const entry = entryView(written);
      await recordAudit(tx, by, { action: 'ledger.adjusted', programId: input.programId, target: { type: 'ledger_entry', id: entry.id }, before: null, after: entry });
      return { entry, replayed: false };
    }
    // The same key committed meanwhile by a concurrent request.
    return answer((await tx.one<LedgerEntry>(q.byCause, [cause]))!, true);
  });
}
