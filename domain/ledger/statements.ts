/**
 * Monthly statements (partner-program.md, "Statements and reconciliation"; docs/decisions/ledger.md,
 * "Statements"). For a UTC month: per partner and currency the opening balance (every entry before
 * the month: the previous month's closing), the month's entries by kind, and the closing balance;
 * per currency the program's gross sales, refunds, net sales and net commissions. Entries, sales and
 * refunds count in the month they were recorded (created_at), so a closed month never changes.
 *
 * What it reads (docs/decisions/ledger.md, "What a statement reads"): the month's latest checkpoint
 * (the statement up to a closed instant: the month's end, or a UTC midnight in it; stored by this
 * read the first time it can use one, append-only) and the rows recorded since, through the
 * (program_id, created_at) indexes; with none, the opening from the previous month's end's
 * checkpoint or from every earlier entry. The totals' net commissions are summed from the lines.
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

/*
 * What a statement reads (docs/decisions/ledger.md, "What a statement reads"). The month's lines and
 * sales up to an instant $3 are its checkpoint $4 (the month's latest stored one before $3, or null)
 * plus the rows recorded since (from $4, or from the month's start $2, to $3), through the
 * (program_id, created_at) indexes. With no checkpoint, the opening is the previous month's end's
 * checkpoint ($7: it is stored; $6 its month) or, without one, every entry before the month. $5 is
 * the month (its first day). The same text serves the read and the store of a checkpoint.
 */
const KINDS = ['commissions', 'adjustments', 'reversals', 'clawbacks', 'manual', 'payouts'] as const;
const KIND_OF = { commissions: 'commission', adjustments: 'adjustment', reversals: 'reversal', clawbacks: 'clawback', manual: 'manual', payouts: 'payout' };
const NET_KINDS = `('commission', 'adjustment', 'reversal', 'clawback')`;
const sumOf = (prefix: string) => KINDS.map((k) => `${prefix}${k}`).join(' + ');
const LINES_UP_TO = `base AS (
       SELECT partner_id, currency, opening, ${KINDS.join(', ')}, entries, net_entries
         FROM statement_checkpoint_lines WHERE program_id = $1 AND month = $5::date AND upto = $4::timestamptz
       UNION ALL
       SELECT partner_id, currency, opening + ${sumOf('')}, ${KINDS.map(() => '0').join(', ')}, 0, 0
         FROM statement_checkpoint_lines
        WHERE program_id = $1 AND month = $6::date AND upto = $2::timestamptz AND $4::timestamptz IS NULL AND $7::boolean
          AND opening + ${sumOf('')} <> 0
       UNION ALL
       SELECT partner_id, currency, sum(amount_minor), ${KINDS.map(() => '0').join(', ')}, 0, 0 FROM ledger_entries
        WHERE program_id = $1 AND created_at < $2::timestamptz AND $4::timestamptz IS NULL AND NOT $7::boolean
        GROUP BY partner_id, currency HAVING sum(amount_minor) <> 0
     ), since AS (
       SELECT partner_id, currency, ${KINDS.map((k) => `COALESCE(sum(amount_minor) FILTER (WHERE kind = '${KIND_OF[k]}'), 0) AS ${k}`).join(', ')},
              count(*) AS entries, count(*) FILTER (WHERE kind IN ${NET_KINDS}) AS net_entries
         FROM ledger_entries
        WHERE program_id = $1 AND created_at >= COALESCE($4::timestamptz, $2::timestamptz) AND created_at < $3::timestamptz
        GROUP BY partner_id, currency
     ), lines AS (
       SELECT COALESCE(b.partner_id, s.partner_id) AS partner_id, COALESCE(b.currency, s.currency) AS currency, COALESCE(b.opening, 0) AS opening,
              ${KINDS.map((k) => `COALESCE(b.${k}, 0) + COALESCE(s.${k}, 0) AS ${k}`).join(', ')},
              COALESCE(b.entries, 0) + COALESCE(s.entries, 0) AS entries, COALESCE(b.net_entries, 0) + COALESCE(s.net_entries, 0) AS net_entries
         FROM base b FULL JOIN since s ON s.partner_id = b.partner_id AND s.currency = b.currency
     )`;
// Real sales only (test sales are counted nowhere).
const SALES_UP_TO = `sales AS (
       SELECT COALESCE(b.currency, s.currency) AS currency, COALESCE(b.gross_sales, 0) + COALESCE(s.gross_sales, 0) AS gross_sales,
              COALESCE(b.sales, 0) + COALESCE(s.sales, 0) AS sales
         FROM (SELECT currency, gross_sales, sales FROM statement_checkpoint_sales
                WHERE program_id = $1 AND month = $5::date AND upto = $4::timestamptz) b
         FULL JOIN (SELECT currency, sum(amount_cents) AS gross_sales, count(*) AS sales FROM sale_events
                     WHERE program_id = $1 AND NOT test AND created_at >= COALESCE($4::timestamptz, $2::timestamptz) AND created_at < $3::timestamptz
                     GROUP BY currency) s ON s.currency = b.currency
     )`;

const q = {
  lines: sql(
    'statements.lines',
    `WITH ${LINES_UP_TO}
     SELECT partner_id, currency, opening::bigint, ${KINDS.map((k) => `${k}::bigint`).join(', ')}, net_entries::int FROM lines ORDER BY partner_id, currency`,
  ),
  // A full refund takes what partial refunds left; refunds are read from their own rows, the month's whole.
  totals: sql(
    'statements.totals',
    `WITH ${SALES_UP_TO}, refunded AS (
       SELECT s.currency, sum(s.amount_cents - s.refunded_cents) AS amount FROM refunds r JOIN sale_events s ON s.id = r.sale_id
        WHERE r.program_id = $1 AND NOT s.test AND r.created_at >= $2::timestamptz AND r.created_at < $3::timestamptz GROUP BY s.currency
       UNION ALL
       SELECT s.currency, sum(pr.amount_cents) FROM partial_refunds pr JOIN sale_events s ON s.id = pr.sale_id
        WHERE pr.program_id = $1 AND NOT s.test AND pr.created_at >= $2::timestamptz AND pr.created_at < $3::timestamptz GROUP BY s.currency
     ), refunds AS (
       SELECT currency, sum(amount) AS amount FROM refunded GROUP BY currency
     )
     SELECT COALESCE(s.currency, r.currency) AS currency, COALESCE(s.gross_sales, 0)::bigint AS gross_sales, COALESCE(r.amount, 0)::bigint AS refunds
       FROM sales s FULL JOIN refunds r ON r.currency = s.currency`,
  ),
  /**
   * Stores the month's checkpoint at $3 (the parameters of the reads): its row, lines and sales in
   * one statement, once (a concurrent store of the same one waits for this one, then writes nothing).
   */
  store: sql(
    'statements.store_checkpoint',
    `WITH stored AS (
       INSERT INTO statement_checkpoints (program_id, month, upto) VALUES ($1, $5::date, $3::timestamptz) ON CONFLICT DO NOTHING RETURNING program_id
     ), ${LINES_UP_TO}, ${SALES_UP_TO}, stored_lines AS (
       INSERT INTO statement_checkpoint_lines (program_id, month, upto, partner_id, currency, opening, ${KINDS.join(', ')}, entries, net_entries)
       SELECT $1, $5::date, $3::timestamptz, partner_id, currency, opening, ${KINDS.join(', ')}, entries, net_entries
         FROM lines WHERE EXISTS (SELECT 1 FROM stored)
     )
     INSERT INTO statement_checkpoint_sales (program_id, month, upto, currency, gross_sales, sales)
     SELECT $1, $5::date, $3::timestamptz, currency, gross_sales, sales FROM sales WHERE EXISTS (SELECT 1 FROM stored)`,
  ),
  /**
   * The month's latest checkpoint at or before its end $3, whether the previous month's end ($2) has
   * one, and the instant a new checkpoint would be at: today's UTC midnight, or the month's end.
   */
  checkpoints: sql(
    'statements.checkpoints',
    `SELECT (SELECT max(upto) FROM statement_checkpoints WHERE program_id = $1 AND month = $4::date AND upto <= $3::timestamptz) AS latest,
            EXISTS (SELECT 1 FROM statement_checkpoints WHERE program_id = $1 AND month = $5::date AND upto = $2::timestamptz) AS previous_end,
            LEAST($3::timestamptz, date_trunc('day', now(), 'UTC')) AS next`,
  ),
  /**
   * Whether the instant $1 is closed: a minute past (the database's clock), and no session of this
   * database in a transaction that started before it (pg_stat_activity; a session whose activity
   * this role may not see counts as one).
   */
  closed: sql(
    'statements.closed',
    `SELECT now() >= $1::timestamptz + interval '1 minute' AND NOT EXISTS (
              SELECT 1 FROM pg_stat_activity a
               WHERE a.datid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND a.pid <> pg_backend_pid()
                 AND (a.backend_type IS NULL OR a.backend_type = 'client backend')
                 AND (a.state IS NULL OR a.state = 'disabled' OR a.xact_start < $1::timestamptz)) AS closed`,
  ),
};

/** The statement's canonical JSON (RFC 8785), the digest's input. */
export const canonicalJson = (body: StatementBody): string => canonicalize(body)!;

export const statementDigest = (body: StatementBody): string => createHash('sha256').update(canonicalJson(body)).digest('hex');

type LineRow = Omit<StatementLine, 'closing'> & { net_entries: number };

interface Month {
  programId: number;
  /** The month's first instant and its end. */
  from: Date;
  to: Date;
}

const day = (d: Date) => d.toISOString().slice(0, 10);
const monthAt = (year: number, month: number) => new Date(Date.UTC(year, month, 1));
const previousMonth = (m: Month): Month => ({ programId: m.programId, from: monthAt(m.from.getUTCFullYear(), m.from.getUTCMonth() - 1), to: m.from });

/** The parameters of the reads and the store: the month's rows up to `upto`, from its checkpoint `base`. */
const params = (m: Month, upto: Date, base: Date | null, previousEnd: boolean) => [
  m.programId, m.from.toISOString(), upto.toISOString(), base?.toISOString() ?? null, day(m.from), day(previousMonth(m).from), previousEnd,
];

const isClosed = async (db: Queryable, at: Date) => (await db.one<{ closed: boolean }>(q.closed, [at.toISOString()]))!.closed;

const checkpointsOf = (db: Queryable, m: Month) =>
  db.one<{ latest: Date | null; previous_end: boolean; next: Date }>(q.checkpoints, [m.programId, m.from.toISOString(), m.to.toISOString(), day(m.from), day(previousMonth(m).from)]);

/** Stores the month's checkpoint at `upto` (closed), from its latest one before, or from its opening. */
async function storeCheckpoint(db: Queryable, m: Month, upto: Date): Promise<void> {
  const { latest, previous_end } = (await checkpointsOf(db, { ...m, to: upto }))!;
  const base = latest && latest.getTime() < upto.getTime() ? latest : null;
  await db.many(q.store, params(m, upto, base, previous_end));
}

/**
 * The month's checkpoint to read from, storing those a statement can use once their instant is
 * closed: the previous month's end (this month's opening) and the latest UTC midnight of this month
 * (or its end). A checkpoint never changes: an instant is closed only once no transaction that
 * started before it is still running, and the rows a statement reads carry their transaction's
 * start time (created_at), so none can still appear before it.
 */
async function checkpoint(db: Queryable, m: Month): Promise<{ base: Date | null; previousEnd: boolean }> {
  const stored = (await checkpointsOf(db, m))!;
  let { latest, previous_end: previousEnd } = stored;
  const { next } = stored;
  if (!previousEnd && latest === null && (await isClosed(db, m.from))) {
    await storeCheckpoint(db, previousMonth(m), m.from);
    previousEnd = true;
  }
  if (next.getTime() > m.from.getTime() && (latest === null || next.getTime() > latest.getTime()) && (await isClosed(db, next))) {
    await storeCheckpoint(db, m, next);
    latest = next;
  }
  return { base: latest, previousEnd };
}

export interface StatementOptions {
  /**
   * Read from the stored checkpoints, storing those it can use (the default); false reads every
   * row from the month's start and the opening from the whole history, and stores nothing (the
   * replayed statement of verify-statement, computed from the event log's rows alone).
   */
  checkpoints?: boolean;
}

/** A program's statement of a month, from the database given (the service's, or a scratch store replayed from the event log). */
export async function statement(db: Queryable, programId: number, period: string, options: StatementOptions = {}): Promise<Statement> {
  const bounds = periodBounds(period);
  if (!bounds) throw new Error(`not a period: ${period}`);
  const m: Month = { programId, ...bounds };
  const { base, previousEnd } = options.checkpoints === false ? { base: null, previousEnd: false } : await checkpoint(db, m);
  const args = params(m, m.to, base, previousEnd);
  const [lines, totals] = await Promise.all([
    db.many<LineRow>(q.lines, args),
    db.many<{ currency: string; gross_sales: number; refunds: number }>(q.totals, args.slice(0, 5)),
  ]);
  // Per currency: the sales' totals, and the commission, adjustment, reversal and clawback entries of the month.
  const byCurrency = new Map<string, StatementTotal>();
  const totalOf = (currency: string) => {
    let t = byCurrency.get(currency);
    if (!t) byCurrency.set(currency, (t = { currency, gross_sales: 0, refunds: 0, net_sales: 0, net_commissions: 0 }));
    return t;
  };
  for (const t of totals) Object.assign(totalOf(t.currency), { gross_sales: Number(t.gross_sales), refunds: Number(t.refunds) });
  const partners = lines.map((l) => {
    const line = { partner_id: Number(l.partner_id), currency: l.currency, opening: Number(l.opening) } as StatementLine;
    for (const k of KINDS) line[k] = Number(l[k]);
    line.closing = line.opening + KINDS.reduce((sum, k) => sum + line[k], 0);
    if (Number(l.net_entries) > 0) totalOf(l.currency).net_commissions += line.commissions + line.adjustments + line.reversals + line.clawbacks;
    return line;
  });
  const body: StatementBody = {
    program_id: programId,
    period,
    from: bounds.from.toISOString(),
    to: bounds.to.toISOString(),
    partners,
    // Currency codes are three capital letters: their order is the same in every collation.
    totals: [...byCurrency.values()]
      .sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0))
      .map((t) => ({ ...t, net_sales: t.gross_sales - t.refunds })),
  };
  return { ...body, digest: statementDigest(body) };
}

const names = sql('statements.partner_names', `SELECT id AS partner_id, name AS partner_name FROM partners WHERE id = ANY ($1::bigint[]) ORDER BY id`);

/** The names of a statement's partners, for people (not part of the statement nor of its digest). */
export async function statementPartnerNames(db: Queryable, s: StatementBody): Promise<{ partner_id: number; partner_name: string | null }[]> {
  const ids = [...new Set(s.partners.map((l) => l.partner_id))];
  if (ids.length === 0) return [];
  const found = new Map((await db.many<{ partner_id: number | string; partner_name: string }>(names, [ids])).map((r) => [Number(r.partner_id), r.partner_name]));
  return ids.map((id) => ({ partner_id: id, partner_name: found.get(id) ?? null }));
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
