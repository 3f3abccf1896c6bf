/**
 * What the agent API reads from Postgres (issue 13): cursor-paginated lists of a program's sales,
 * commissions and partners, and the aggregates an agent uses in one call. Every statement is
 * bounded by the program id the permission check allowed, so no id of another workspace is reached.
 */
import { sql, type Queryable } from '../../core/db.js';

/** Where a page ends: the row's time (as Postgres' text, to the microsecond) and id, as text. */
export interface PagePosition {
  at: string;
  id: string;
}

/** The filters every list takes: a time range (from inclusive, to exclusive), a partner, a status. */
export interface ListFilter {
  from?: string;
  to?: string;
  partnerId?: number;
  status?: string;
  after?: PagePosition;
  limit: number;
}

export interface Page<T> {
  items: T[];
  /** The position after the last item, when more items follow. */
  next: PagePosition | undefined;
}

type Positioned<T> = T & { cursor_at: string; cursor_id: string };

/** Rows are fetched one past the limit: the extra one says whether another page follows. */
function page<T>(rows: Positioned<T>[], limit: number): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept.at(-1);
  const items = kept.map(({ cursor_at: _at, cursor_id: _id, ...item }) => item as T);
  return { items, next: more && last ? { at: last.cursor_at, id: last.cursor_id } : undefined };
}

const listParams = (programId: number, f: ListFilter) => [
  programId,
  f.from ?? null,
  f.to ?? null,
  f.partnerId ?? null,
  f.status ?? null,
  f.after?.at ?? null,
  f.after?.id ?? null,
  f.limit + 1,
];

// Each list is ordered by its time and id (as text); the `>=` on the time lets the (program_id,
// time) index bound the scan, the row comparison resumes after the cursor's row exactly.
const q = {
  sales: sql(
    'agent.sales_page',
    `SELECT s.id AS sale_id, s.transaction_id, s.customer_id, s.partner_id, s.amount_cents, s.currency, s.status, s.test,
            s.occurred_at, s.created_at, s.commission_skipped_reason, s.occurred_at::text AS cursor_at, s.id::text AS cursor_id
       FROM sale_events s
      WHERE s.program_id = $1
        AND ($2::timestamptz IS NULL OR s.occurred_at >= $2::timestamptz)
        AND ($3::timestamptz IS NULL OR s.occurred_at < $3::timestamptz)
        AND ($4::bigint IS NULL OR s.partner_id = $4::bigint)
        AND ($5::text IS NULL OR s.status = $5::text)
        AND ($6::timestamptz IS NULL OR (s.occurred_at >= $6::timestamptz AND (s.occurred_at, s.id::text) > ($6::timestamptz, $7::text)))
      ORDER BY s.occurred_at, s.id::text
      LIMIT $8`,
  ),
  commissions: sql(
    'agent.commissions_page',
    `SELECT c.id AS commission_id, c.sale_id, c.partner_id, c.customer_id, c.commission_type, c.commission_rate,
            c.amount_cents, c.currency, commission_state(c) AS status, c.created_at, c.reversed_at, c.rule_version,
            c.created_at::text AS cursor_at, c.id::text AS cursor_id
       FROM commissions c
      WHERE c.program_id = $1
        AND ($2::timestamptz IS NULL OR c.created_at >= $2::timestamptz)
        AND ($3::timestamptz IS NULL OR c.created_at < $3::timestamptz)
        AND ($4::bigint IS NULL OR c.partner_id = $4::bigint)
        AND ($5::text IS NULL OR commission_state(c) = $5::text)
        AND ($6::timestamptz IS NULL OR (c.created_at >= $6::timestamptz AND (c.created_at, c.id::text) > ($6::timestamptz, $7::text)))
      ORDER BY c.created_at, c.id::text
      LIMIT $8`,
  ),
  partners: sql(
    'agent.partners_page',
    `SELECT pp.id AS partner_program_id, pp.partner_id, p.name, p.email, pp.status, pp.created_at,
            COALESCE((SELECT json_agg(json_build_object('aff_code', l.aff_code, 'enabled', l.enabled) ORDER BY l.id)
                        FROM referral_links l WHERE l.program_id = $1 AND l.partner_program_id = pp.id), '[]'::json) AS links,
            pp.created_at::text AS cursor_at, pp.id::text AS cursor_id
       FROM partner_programs pp LEFT JOIN partners p ON p.id = pp.partner_id
      WHERE pp.program_id = $1
        AND ($2::timestamptz IS NULL OR pp.created_at >= $2::timestamptz)
        AND ($3::timestamptz IS NULL OR pp.created_at < $3::timestamptz)
        AND ($4::bigint IS NULL OR pp.partner_id = $4::bigint)
        AND ($5::text IS NULL OR pp.status = $5::text)
        AND ($6::timestamptz IS NULL OR (pp.created_at >= $6::timestamptz AND (pp.created_at, pp.id::text) > ($6::timestamptz, $7::text)))
      ORDER BY pp.created_at, pp.id::text
      LIMIT $8`,
  ),
  // Created: commissions written in the range; reversed: those of them reversed since. The same
  // rows as the commission list with the same range (all statuses, then status=reversed).
  reconciliation: sql(
    'agent.commission_reconciliation',
    `SELECT c.partner_id, c.currency, count(*)::int AS created_count, sum(c.amount_cents)::bigint AS created_cents,
            (count(*) FILTER (WHERE c.status = 'reversed'))::int AS reversed_count,
            COALESCE(sum(c.amount_cents) FILTER (WHERE c.status = 'reversed'), 0)::bigint AS reversed_cents
       FROM commissions c
      WHERE c.program_id = $1
        AND ($2::timestamptz IS NULL OR c.created_at >= $2::timestamptz)
        AND ($3::timestamptz IS NULL OR c.created_at < $3::timestamptz)
      GROUP BY c.partner_id, c.currency
      ORDER BY c.partner_id, c.currency`,
  ),
  topPartners: sql(
    'agent.top_partners',
    `SELECT c.partner_id, p.name, c.currency, count(*)::int AS commissions, sum(c.amount_cents)::bigint AS commission_cents,
            sum(s.amount_cents)::bigint AS revenue_cents
       FROM commissions c JOIN sale_events s ON s.id = c.sale_id LEFT JOIN partners p ON p.id = c.partner_id
      WHERE c.program_id = $1 AND c.status <> 'reversed'
        AND ($2::timestamptz IS NULL OR c.created_at >= $2::timestamptz)
        AND ($3::timestamptz IS NULL OR c.created_at < $3::timestamptz)
      GROUP BY c.partner_id, p.name, c.currency
      ORDER BY commission_cents DESC, c.partner_id, c.currency
      LIMIT $4`,
  ),
  programCounts: sql(
    'agent.program_counts',
    `SELECT (SELECT count(*) FROM partner_programs pp WHERE pp.program_id = $1 AND pp.status = 'approved')::int AS approved_partners,
            (SELECT count(*) FROM referral_links l WHERE l.program_id = $1 AND l.enabled)::int AS enabled_links,
            (SELECT count(*) FROM referral_links l WHERE l.program_id = $1 AND NOT l.enabled)::int AS disabled_links`,
  ),
  programs: sql(
    'agent.programs_of_workspace',
    `SELECT p.id, p.name, p.domain, p.created_at FROM programs p WHERE p.workspace_id = $1 ORDER BY p.id`,
  ),
};

export interface SaleRow {
  sale_id: string;
  transaction_id: string;
  customer_id: number | null;
  partner_id: number | null;
  amount_cents: number;
  currency: string;
  status: string;
  test: boolean;
  occurred_at: Date;
  created_at: Date;
  /** Why the sale earned no commission its terms would otherwise pay ('recurring_limit_reached'; issue 30). */
  commission_skipped_reason: string | null;
}

export interface CommissionRow {
  commission_id: string;
  sale_id: string;
  partner_id: number;
  customer_id: number | null;
  commission_type: string;
  commission_rate: number;
  amount_cents: number;
  currency: string;
  status: string;
  created_at: Date;
  reversed_at: Date | null;
  rule_version: number | null;
}

export interface PartnerRow {
  partner_program_id: number;
  partner_id: number | null;
  name: string | null;
  email: string | null;
  status: string;
  created_at: Date;
  links: { aff_code: string; enabled: boolean }[];
}

export async function salesPage(db: Queryable, programId: number, f: ListFilter): Promise<Page<SaleRow>> {
  return page(await db.many<Positioned<SaleRow>>(q.sales, listParams(programId, f)), f.limit);
}

export async function commissionsPage(db: Queryable, programId: number, f: ListFilter): Promise<Page<CommissionRow>> {
  return page(await db.many<Positioned<CommissionRow>>(q.commissions, listParams(programId, f)), f.limit);
}

export async function partnersPage(db: Queryable, programId: number, f: ListFilter): Promise<Page<PartnerRow>> {
  const rows = await db.many<Positioned<PartnerRow> & { links: PartnerRow['links'] | string }>(q.partners, listParams(programId, f));
  // json arrives parsed from pg; PGlite may hand it over as text.
  for (const row of rows) if (typeof row.links === 'string') row.links = JSON.parse(row.links) as PartnerRow['links'];
  return page(rows as Positioned<PartnerRow>[], f.limit);
}

export interface TimeRange {
  from?: string;
  to?: string;
}

export interface ReconciliationLine {
  partner_id: number;
  currency: string;
  created_count: number;
  created_cents: number;
  reversed_count: number;
  reversed_cents: number;
  net_cents: number;
}

export interface CurrencyTotal {
  currency: string;
  created_cents: number;
  reversed_cents: number;
  net_cents: number;
}

/** Commissions created in the range, per partner and currency, with what was reversed of them and the net. */
export async function commissionReconciliation(db: Queryable, programId: number, range: TimeRange) {
  const rows = await db.many<Omit<ReconciliationLine, 'net_cents'>>(q.reconciliation, [programId, range.from ?? null, range.to ?? null]);
  const lines: ReconciliationLine[] = rows.map((r) => ({
    partner_id: Number(r.partner_id),
    currency: r.currency,
    created_count: Number(r.created_count),
    created_cents: Number(r.created_cents),
    reversed_count: Number(r.reversed_count),
    reversed_cents: Number(r.reversed_cents),
    net_cents: Number(r.created_cents) - Number(r.reversed_cents),
  }));
  const totals = new Map<string, CurrencyTotal>();
  for (const l of lines) {
    const t = totals.get(l.currency) ?? { currency: l.currency, created_cents: 0, reversed_cents: 0, net_cents: 0 };
    t.created_cents += l.created_cents;
    t.reversed_cents += l.reversed_cents;
    t.net_cents += l.net_cents;
    totals.set(l.currency, t);
  }
  return { lines, totals: [...totals.values()].sort((a, b) => a.currency.localeCompare(b.currency)) };
}

export interface TopPartner {
  partner_id: number;
  name: string | null;
  currency: string;
  commissions: number;
  commission_cents: number;
  revenue_cents: number;
}

/** Partners ranked by the commissions (not reversed) created in the range, per currency. */
export async function topPartners(db: Queryable, programId: number, range: TimeRange, limit: number): Promise<TopPartner[]> {
  const rows = await db.many<TopPartner>(q.topPartners, [programId, range.from ?? null, range.to ?? null, limit]);
  return rows.map((r) => ({ ...r, partner_id: Number(r.partner_id), commission_cents: Number(r.commission_cents), revenue_cents: Number(r.revenue_cents) }));
}

export async function programCounts(db: Queryable, programId: number) {
  return (await db.one<{ approved_partners: number; enabled_links: number; disabled_links: number }>(q.programCounts, [programId]))!;
}

export async function programsOfWorkspace(db: Queryable, workspaceId: number) {
  return db.many<{ id: number; name: string; domain: string; created_at: Date }>(q.programs, [workspaceId]);
}
