import { sql, type Database } from '../../core/db.js';

export const PARTNER_STATUSES = ['pending', 'approved', 'rejected', 'banned', 'removed'] as const;
export type PartnerStatus = (typeof PARTNER_STATUSES)[number];

export interface PartnerListRow {
  partner_id: number | null;
  partner_program_id: number;
  name: string | null;
  email: string | null;
  status: PartnerStatus;
  /** The partner group it is in (issue 30), null when none: the console's partners screen shows it. */
  group_id: number | null;
  created_at: Date;
  links: { aff_code: string; enabled: boolean }[];
  /** How many partners match the filter in all (the page shows at most `limit`). */
  total: number;
}

/** LIKE's own characters in a search are searched for, not used as wildcards. */
const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const q = {
  // The CLI's synthetic test partner (cli_test_fixtures) is the service's, never the brand's: it is
  // not listed. Newest first. A search looks in names, emails and link codes. Each record's links
  // are aggregated once for the program (not one subquery per partner).
  list: sql(
    'console.partner_list',
    `WITH links AS (
       SELECT partner_program_id, json_agg(json_build_object('aff_code', aff_code, 'enabled', enabled) ORDER BY id) AS links,
              string_agg(aff_code, ' ') AS codes
         FROM referral_links WHERE program_id = $1 GROUP BY partner_program_id
     )
     SELECT pp.partner_id, pp.id AS partner_program_id, p.name, p.email, pp.status, pp.group_id, pp.created_at,
            COALESCE(l.links, '[]'::json) AS links, count(*) OVER () AS total
       FROM partner_programs pp
       LEFT JOIN partners p ON p.id = pp.partner_id
       LEFT JOIN links l ON l.partner_program_id = pp.id
      WHERE pp.program_id = $1
        AND NOT EXISTS (SELECT 1 FROM cli_test_fixtures f WHERE f.program_id = $1 AND f.partner_program_id = pp.id)
        AND ($2::text IS NULL OR p.name ILIKE $2 OR p.email ILIKE $2 OR l.codes ILIKE $2)
        AND ($3::text IS NULL OR pp.status = $3)
      ORDER BY pp.created_at DESC, pp.id DESC
      LIMIT $4`,
  ),
};

const balances = sql(
  'console.partner_balances',
  // The ledger's balance is the sum of a partner's entries (partner-program.md, "Ledger"); read for
  // the partners of one page only, through the ledger's (program_id, partner_id, id) index, so a
  // page costs its partners' entries, not the program's.
  `SELECT partner_id, currency, sum(amount_minor)::bigint AS balance_minor
     FROM ledger_entries WHERE program_id = $1 AND partner_id = ANY ($2::bigint[])
    GROUP BY partner_id, currency ORDER BY partner_id, currency`,
);

/** The ledger balance per currency of each partner given (absent: no entry yet). */
export async function ledgerBalances(db: Database, programId: number, partnerIds: number[]): Promise<Map<number, { currency: string; amount_minor: number }[]>> {
  const out = new Map<number, { currency: string; amount_minor: number }[]>();
  if (partnerIds.length === 0) return out;
  const rows = await db.many<{ partner_id: number; currency: string; balance_minor: number }>(balances, [programId, partnerIds]);
  for (const r of rows) {
    const id = Number(r.partner_id);
    out.set(id, [...(out.get(id) ?? []), { currency: r.currency, amount_minor: Number(r.balance_minor) }]);
  }
  return out;
}

export interface PartnerFilter {
  search?: string;
  status?: PartnerStatus;
  limit: number;
}

/** A program's partners with their links, newest first, searched by name, email or link code. */
export async function listPartners(db: Database, programId: number, f: PartnerFilter): Promise<PartnerListRow[]> {
  const rows = await db.many<PartnerListRow & { links: PartnerListRow['links'] | string }>(q.list, [
    programId,
    f.search ? likePattern(f.search) : null,
    f.status ?? null,
    f.limit,
  ]);
  // PGlite hands json back as text; pg parses it.
  return rows.map((r) => ({ ...r, group_id: r.group_id === null ? null : Number(r.group_id), links: typeof r.links === 'string' ? JSON.parse(r.links) : r.links, total: Number(r.total) }));
}
