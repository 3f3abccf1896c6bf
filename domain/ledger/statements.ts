/**
 * Monthly statements (partner-program.md, "Statements and reconciliation"; docs/decisions/ledger.md,
 * "Statements"). For a UTC month: per partner and currency the opening balance (every entry before
 * the month: the previous month's closing), the month's entries by kind, and the closing balance;
 * per currency the program's gross sales, refunds, net sales and net commissions. Entries, sales and
 * refunds count in the month they were recorded (created_at), so a closed month never changes.
 *
 * The digest is the SHA-256 of the statement's canonical JSON: RFC 8785 (JCS, the `canonicalize`
 * package): keys sorted, no whitespace, amounts as JSON integers; lines ordered by partner then
 * currency, totals by currency. The same statement of the same database has the same digest; the
 * operator's check (npm run ops -- verify-statement) recomputes it from the event log alone.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { sql, type Queryable } from '../../core/db.js';

export interface StatementLine {
  partner_id: number;
  currency: string;
  opening: number;
  commissions: number;
  adjustments: number;
  reversals: number;
  clawbacks: number;
  manual: number;
  payouts: number;
  closing: number;
}

export interface StatementTotal {
  currency: string;
  gross_sales: number;
  refunds: number;
  net_sales: number;
  net_commissions: number;
}

export interface StatementBody {
  program_id: number;
  period: string;
  from: string;
  to: string;
  partners: StatementLine[];
  totals: StatementTotal[];
}

export interface Statement extends StatementBody {
  digest: string;
}

const PERIOD = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** `YYYY-MM` to its UTC month [from, to); undefined when it is not one. */
export function periodBounds(period: string): { from: Date; to: Date } | undefined {
  const m = PERIOD.exec(period);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]) - 1;
  if (year < 2000) return undefined;
  return { from: new Date(Date.UTC(year, month, 1)), to: new Date(Date.UTC(year, month + 1, 1)) };
}

const q = {
  lines: sql(
    'statements.lines',
    `SELECT partner_id, currency,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at < $2), 0)::bigint AS opening,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at >= $2 AND kind = 'commission'), 0)::bigint AS commissions,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at >= $2 AND kind = 'adjustment'), 0)::bigint AS adjustments,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at >= $2 AND kind = 'reversal'), 0)::bigint AS reversals,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at >= $2 AND kind = 'clawback'), 0)::bigint AS clawbacks,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at >= $2 AND kind = 'manual'), 0)::bigint AS manual,
            COALESCE(sum(amount_minor) FILTER (WHERE created_at >= $2 AND kind = 'payout'), 0)::bigint AS payouts,
            sum(amount_minor)::bigint AS closing
       FROM ledger_entries
      WHERE program_id = $1 AND created_at < $3
      GROUP BY partner_id, currency
     HAVING COALESCE(sum(amount_minor) FILTER (WHERE created_at < $2), 0) <> 0 OR bool_or(created_at >= $2)
      ORDER BY partner_id, currency`,
  ),
  // Real sales only (test sales are counted nowhere); a full refund takes what partial refunds left.
  totals: sql(
    'statements.totals',
    `WITH gross AS (
       SELECT currency, sum(amount_cents) AS amount FROM sale_events
        WHERE program_id = $1 AND NOT test AND created_at >= $2 AND created_at < $3 GROUP BY currency
     ), refunded AS (
       SELECT s.currency, sum(s.amount_cents - s.refunded_cents) AS amount FROM refunds r JOIN sale_events s ON s.id = r.sale_id
        WHERE r.program_id = $1 AND NOT s.test AND r.created_at >= $2 AND r.created_at < $3 GROUP BY s.currency
       UNION ALL
       SELECT s.currency, sum(pr.amount_cents) FROM partial_refunds pr JOIN sale_events s ON s.id = pr.sale_id
        WHERE pr.program_id = $1 AND NOT s.test AND pr.created_at >= $2 AND pr.created_at < $3 GROUP BY s.currency
     ), refunds AS (
       SELECT currency, sum(amount) AS amount FROM refunded GROUP BY currency
     ), commissions AS (
       SELECT currency, sum(amount_minor) AS amount FROM ledger_entries
        WHERE program_id = $1 AND kind IN ('commission', 'adjustment', 'reversal', 'clawback') AND created_at >= $2 AND created_at < $3
        GROUP BY currency
     ), currencies AS (
       SELECT currency FROM gross UNION SELECT currency FROM refunds UNION SELECT currency FROM commissions
     )
     SELECT c.currency, COALESCE(g.amount, 0)::bigint AS gross_sales, COALESCE(r.amount, 0)::bigint AS refunds,
            COALESCE(k.amount, 0)::bigint AS net_commissions
       FROM currencies c
       LEFT JOIN gross g ON g.currency = c.currency LEFT JOIN refunds r ON r.currency = c.currency LEFT JOIN commissions k ON k.currency = c.currency
      ORDER BY c.currency`,
  ),
};

/** The statement's canonical JSON (RFC 8785), the digest's input. */
export const canonicalJson = (body: StatementBody): string => canonicalize(body)!;

export const statementDigest = (body: StatementBody): string => createHash('sha256').update(canonicalJson(body)).digest('hex');

const LINE_AMOUNTS = ['opening', 'commissions', 'adjustments', 'reversals', 'clawbacks', 'manual', 'payouts', 'closing'] as const;

/** A program's statement of a month, from the database given (the service's, or a scratch store replayed from the event log). */
export async function statement(db: Queryable, programId: number, period: string): Promise<Statement> {
  const bounds = periodBounds(period);
  if (!bounds) throw new Error(`not a period: ${period}`);
  const args = [programId, bounds.from.toISOString(), bounds.to.toISOString()];
  const [lines, totals] = await Promise.all([
    db.many<StatementLine>(q.lines, args),
    db.many<{ currency: string; gross_sales: number; refunds: number; net_commissions: number }>(q.totals, args),
  ]);
  const body: StatementBody = {
    program_id: programId,
    period,
    from: bounds.from.toISOString(),
    to: bounds.to.toISOString(),
    partners: lines.map((l) => {
      const line = { partner_id: Number(l.partner_id), currency: l.currency } as StatementLine;
      for (const k of LINE_AMOUNTS) line[k] = Number(l[k]);
      return line;
    }),
    totals: totals.map((t) => ({
      currency: t.currency,
      gross_sales: Number(t.gross_sales),
      refunds: Number(t.refunds),
      net_sales: Number(t.gross_sales) - Number(t.refunds),
      net_commissions: Number(t.net_commissions),
    })),
  };
  return { ...body, digest: statementDigest(body) };
}

/** Where two statements first differ, as `path: a, b`; undefined when they are the same. */
export function firstDifference(a: unknown, b: unknown, path = 'statement'): string | undefined {
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
      if (i >= a.length || i >= b.length) return `${path}[${i}]: ${JSON.stringify(a[i])} vs ${JSON.stringify(b[i])}`;
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  return a === b ? undefined : `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}
