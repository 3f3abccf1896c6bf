/**
 * What a partner reads in its portal: its own records only, in the programs where it is approved,
 * of the session's workspace. Never another partner's, never a customer's personal data (customer
 * keys masked, no emails). Money comes from the ledger's reads (domain/ledger).
 */
import { sql, type Queryable } from '../../core/db.js';
import { partnerBalances, type Balance } from '../ledger/balances.js';
import { COMMISSION_COLUMNS, commissionView, type CommissionView } from '../ledger/lifecycle.js';
import { getPayoutMethod, type PayoutMethod } from '../ledger/methods.js';
import { payoutsPage, type Payout } from '../ledger/payouts.js';
import { statement, type StatementLine } from '../ledger/statements.js';
import type { PortalSession } from './portal-sessions.js';

export interface PortalProgram {
  id: number;
  name: string;
  domain: string;
  status: string;
  joined_at: Date;
  created_at: Date;
}

export interface PortalLink {
  program_id: number;
  aff_code: string;
  enabled: boolean;
  domain: string;
  created_at: Date;
}

export type PortalCommission = Omit<CommissionView, 'partner_id'> & { program_id: number; customer: string | null };

const q = {
  me: sql('portal.me', `SELECT id, name, email, created_at FROM partners WHERE id = $1`),
  programs: sql(
    'portal.programs',
    `SELECT p.id, p.name, p.domain, pp.status, pp.created_at AS joined_at, p.created_at
       FROM partner_programs pp JOIN programs p ON p.id = pp.program_id
      WHERE pp.partner_id = $1 AND p.workspace_id = $2 AND pp.status = 'approved'
      ORDER BY p.id`,
  ),
  links: sql(
    'portal.links',
    `SELECT l.program_id, l.aff_code, l.enabled, p.domain, l.created_at
       FROM referral_links l
       JOIN partner_programs pp ON pp.program_id = l.program_id AND pp.partner_id = l.partner_id AND pp.status = 'approved'
       JOIN programs p ON p.id = l.program_id
      WHERE l.partner_id = $1 AND p.workspace_id = $2 AND ($3::bigint IS NULL OR l.program_id = $3)
      ORDER BY l.program_id, l.id`,
  ),
  // The customer's key shows only its first two characters (masked): enough to tell two apart in a list.
  commissions: sql(
    'portal.commissions',
    `SELECT ${COMMISSION_COLUMNS}, c.program_id,
            CASE WHEN cu.customer_key IS NULL THEN NULL
                 ELSE left(cu.customer_key, 2) || repeat('*', greatest(length(cu.customer_key) - 2, 4)) END AS customer
       FROM commissions c
       LEFT JOIN customers cu ON cu.id = c.customer_id
      WHERE c.partner_id = $1 AND c.program_id = ANY($2::bigint[])
      ORDER BY c.created_at DESC, c.id
      LIMIT $3`,
  ),
};

const num = (v: unknown) => Number(v);

export async function partnerMe(db: Queryable, s: PortalSession) {
  const me = (await db.one<{ id: number; name: string; email: string | null; created_at: Date }>(q.me, [s.partnerId]))!;
  return { ...me, id: num(me.id) };
}

/** The programs the partner is approved in, of the session's workspace. */
export async function partnerPrograms(db: Queryable, s: PortalSession): Promise<PortalProgram[]> {
  return (await db.many<PortalProgram>(q.programs, [s.partnerId, s.workspaceId])).map((p) => ({ ...p, id: num(p.id) }));
}

/** The program when the partner is approved in it (of the session's workspace); undefined otherwise, like an unknown id. */
export async function partnerProgram(db: Queryable, s: PortalSession, programId: number): Promise<PortalProgram | undefined> {
  return (await partnerPrograms(db, s)).find((p) => p.id === programId);
}

export async function partnerLinks(db: Queryable, s: PortalSession, programId: number | undefined): Promise<PortalLink[]> {
  return (await db.many<PortalLink>(q.links, [s.partnerId, s.workspaceId, programId ?? null])).map((l) => ({ ...l, program_id: num(l.program_id) }));
}

export async function partnerCommissions(db: Queryable, s: PortalSession, programIds: number[], limit: number): Promise<PortalCommission[]> {
  const rows = await db.many<CommissionView & { program_id: number; customer: string | null }>(q.commissions, [s.partnerId, programIds, limit]);
  return rows.map((r) => {
    const { partner_id: _partner, ...rest } = commissionView(r);
    return { ...rest, program_id: num(r.program_id), customer: r.customer };
  });
}

export async function partnerBalance(db: Queryable, s: PortalSession, programIds: number[]): Promise<{ program_id: number; balances: Balance[] }[]> {
  return Promise.all(programIds.map(async (programId) => ({ program_id: programId, balances: await partnerBalances(db, programId, s.partnerId) })));
}

export async function partnerPayouts(db: Queryable, s: PortalSession, programIds: number[], limit: number): Promise<Payout[]> {
  const pages = await Promise.all(programIds.map((programId) => payoutsPage(db, programId, { partnerId: s.partnerId, limit })));
  return pages.flatMap((p) => p.items);
}

/** The partner's own lines of each program's statement of the month (the brand's totals are not the partner's). */
export async function partnerStatements(db: Queryable, s: PortalSession, programIds: number[], period: string) {
  return Promise.all(
    programIds.map(async (programId) => {
      const st = await statement(db, programId, period);
      const lines: StatementLine[] = st.partners.filter((l) => l.partner_id === s.partnerId);
      return { program_id: programId, period: st.period, from: st.from, to: st.to, lines };
    }),
  );
}

/** The partner's payout method (one per partner, read through the session's program); null when it has none. */
export async function partnerPayoutMethod(db: Queryable, s: PortalSession): Promise<PayoutMethod | null> {
  return (await getPayoutMethod(db, s.programId, s.partnerId)) ?? null;
}
