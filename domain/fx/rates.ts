/**
 * Storing daily exchange rates (issue 30, point 5; docs/decisions/currencies.md). A file's rates
 * are stored whole or not at all, in one transaction: a rate already stored with the same value
 * is left as it is (importing a file again changes nothing), a different value for a stored
 * (workspace, currency, day) refuses the file with its line. Each new rate is one
 * fx_rate.recorded event in the same transaction, which the warehouse's converted totals read.
 */
import { sql, type Database, type Transaction } from '../../core/db.js';
import { fxRateRecorded, type FxRateRecordedPayload } from '../../schemas/event-contract.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { appendEvents } from '../outbox.js';
import { canonicalDecimal, parseRatesCsv, type CsvProblem, type ParsedRate } from './csv.js';

/** The operator's rates (npm run ops -- import-fx-rates): every workspace's programs use them. */
export const OPERATOR_RATES = 0;

/** Rows per statement: a whole ECB history is about 200,000 rates. */
const CHUNK = 5_000;

const q = {
  // One import at a time per workspace: two files naming the same day cannot both pass the check.
  lock: sql('fx_rates.lock', `SELECT pg_advisory_xact_lock(hashtextextended('fx_rates:' || $1::text, 0))`),
  conflicts: sql(
    'fx_rates.conflicts',
    `SELECT i.line, i.currency, to_char(i.day, 'YYYY-MM-DD') AS day, r.per_eur::text AS stored
       FROM unnest($2::int[], $3::text[], $4::date[], $5::numeric[]) AS i(line, currency, day, per_eur)
       JOIN fx_rates r ON r.workspace_id = $1 AND r.currency = i.currency AND r.day = i.day
      WHERE r.per_eur <> i.per_eur
      ORDER BY i.line, i.currency
      LIMIT 20`,
  ),
  insert: sql(
    'fx_rates.insert',
    `INSERT INTO fx_rates (workspace_id, currency, day, per_eur)
     SELECT $1, i.currency, i.day, i.per_eur FROM unnest($2::text[], $3::date[], $4::numeric[]) AS i(currency, day, per_eur)
     ON CONFLICT (workspace_id, currency, day) DO NOTHING
     RETURNING currency, to_char(day, 'YYYY-MM-DD') AS day, per_eur::text AS per_eur, created_at`,
  ),
};

export interface ImportSummary {
  /** Rates in the file. */
  read: number;
  /** Rates stored now. */
  stored: number;
  /** Rates already stored with the same value. */
  unchanged: number;
  currencies: string[];
  firstDay: string | null;
  lastDay: string | null;
}

export type ImportOutcome = { ok: true; summary: ImportSummary } | { ok: false; problems: CsvProblem[] };

const chunks = <T>(list: readonly T[]): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += CHUNK) out.push(list.slice(i, i + CHUNK));
  return out;
};

/** Stops the transaction with the problems: nothing of the file stays. */
class Refused extends Error {
  constructor(readonly problems: CsvProblem[]) {
    super('fx rates refused');
  }
}

async function storeRates(tx: Transaction, workspaceId: number, rates: readonly ParsedRate[]): Promise<FxRateRecordedPayload[]> {
  await tx.many(q.lock, [workspaceId]);
  for (const part of chunks(rates)) {
    const conflicts = await tx.many<{ line: number; currency: string; day: string; stored: string }>(q.conflicts, [
      workspaceId, part.map((r) => r.line), part.map((r) => r.currency), part.map((r) => r.day), part.map((r) => r.perEur),
    ]);
    if (conflicts.length > 0) {
      throw new Refused(
        conflicts.map((c) => ({
          line: c.line,
          message: `${c.currency} on ${c.day}: ${canonicalDecimal(c.stored)} is already stored; a stored rate is fixed`,
        })),
      );
    }
  }
  const stored: FxRateRecordedPayload[] = [];
  for (const part of chunks(rates)) {
    const rows = await tx.many<{ currency: string; day: string; per_eur: string; created_at: Date }>(q.insert, [
      workspaceId, part.map((r) => r.currency), part.map((r) => r.day), part.map((r) => r.perEur),
    ]);
    const events = rows.map((r) =>
      fxRateRecorded({ workspace_id: workspaceId, currency: r.currency, day: r.day, per_eur: canonicalDecimal(r.per_eur), created_at: r.created_at }),
    );
    await appendEvents(tx, events);
    stored.push(...events.map((e) => e.payload));
  }
  return stored;
}

function summaryOf(rates: readonly ParsedRate[], stored: number): ImportSummary {
  const days = rates.map((r) => r.day).sort();
  return {
    read: rates.length,
    stored,
    unchanged: rates.length - stored,
    currencies: [...new Set(rates.map((r) => r.currency))].sort(),
    firstDay: days[0] ?? null,
    lastDay: days.at(-1) ?? null,
  };
}

/**
 * Parses and stores a rates file for a workspace (OPERATOR_RATES: the operator's). `by` names the
 * owner whose write it is (the workspace's audit log); the operator's command has none.
 */
export async function importFxRates(
  db: Database,
  workspaceId: number,
  csv: string,
  today: string,
  by?: AuditContext,
): Promise<ImportOutcome> {
  const parsed = parseRatesCsv(csv, today);
  if (!parsed.ok) return { ok: false, problems: parsed.problems };
  try {
    return await db.transaction(async (tx) => {
      const stored = await storeRates(tx, workspaceId, parsed.rates);
      const summary = summaryOf(parsed.rates, stored.length);
      if (by && stored.length > 0) {
        await recordAudit(tx, by, {
          action: 'fx_rates.imported',
          programId: null,
          workspaceId,
          target: { type: 'fx_rates', id: workspaceId },
          before: null,
          after: summary,
        });
      }
      return { ok: true as const, summary };
    });
  } catch (error) {
    if (error instanceof Refused) return { ok: false, problems: error.problems };
    throw error;
  }
}

/** The summary as the operator reads it. */
export const summaryLine = (s: ImportSummary): string =>
  `${s.stored} rate(s) stored, ${s.unchanged} already stored with the same value` +
  (s.read > 0 ? `; ${s.currencies.join(', ')} from ${s.firstDay} to ${s.lastDay}` : '');
