/**
 * The partner portal's way in (partner-program.md, "Partners, applications and the portal"): an
 * owner makes a one-time sign-in link for an approved partner (valid 24 hours, used once, only its
 * hash stored, shown once); following it opens a portal session (a cookie, hashed at rest, expiring,
 * ended by sign-out or a ban). The session sees the partner's programs of the workspace whose
 * program made the link (decisions/partner-portal.md).
 */
import { randomBytes } from 'node:crypto';
import { sql, type Database, type Queryable } from '../../core/db.js';
import { hashSecret } from '../access/secrets.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { recordPartnerSignInAddress } from '../fraud/sign-in-addresses.js';

export const PORTAL_LINK_LIFETIME_MS = 24 * 3_600_000;
/** A portal session lasts 7 days from sign-in (ours): a new link signs in again. */
export const PORTAL_SESSION_LIFETIME_MS = 7 * 24 * 3_600_000;

export const newPortalLinkToken = () => `ppl_${randomBytes(24).toString('base64url')}`;
const newPortalSessionToken = () => `pps_${randomBytes(24).toString('base64url')}`;

export interface PortalSession {
  partnerId: number;
  workspaceId: number;
  /** The program whose link opened the session. */
  programId: number;
}

const q = {
  approved: sql(
    'portal.approved_partner',
    `SELECT pp.status FROM partner_programs pp WHERE pp.program_id = $1 AND pp.partner_id = $2`,
  ),
  link: sql(
    'portal.link_insert',
    `INSERT INTO partner_portal_links (token_hash, partner_id, program_id, expires_at)
     VALUES ($1, $2, $3, now() + make_interval(secs => $4::double precision / 1000)) RETURNING expires_at`,
  ),
  // Used once: the first to set used_at wins; the partner must still be approved in the program.
  consume: sql(
    'portal.link_consume',
    `UPDATE partner_portal_links l SET used_at = now()
       FROM partner_programs pp, programs p
      WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now()
        AND pp.program_id = l.program_id AND pp.partner_id = l.partner_id AND pp.status = 'approved'
        AND p.id = l.program_id
     RETURNING l.partner_id AS "partnerId", l.program_id AS "programId", p.workspace_id AS "workspaceId"`,
  ),
  why: sql('portal.link_why', `SELECT used_at IS NOT NULL AS used, expires_at <= now() AS expired FROM partner_portal_links WHERE token_hash = $1`),
  session: sql(
    'portal.session_insert',
    `INSERT INTO partner_portal_sessions (token_hash, partner_id, workspace_id, program_id, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000))`,
  ),
  find: sql(
    'portal.session_find',
    `SELECT partner_id AS "partnerId", workspace_id AS "workspaceId", program_id AS "programId"
       FROM partner_portal_sessions WHERE token_hash = $1 AND expires_at > now()`,
  ),
  revoke: sql('portal.session_revoke', `DELETE FROM partner_portal_sessions WHERE token_hash = $1 RETURNING id`),
  revokePartner: sql('portal.session_revoke_partner', `DELETE FROM partner_portal_sessions WHERE partner_id = $1 RETURNING id`),
};

export type PortalLinkOutcome =
  | { outcome: 'created'; token: string; expiresAt: Date }
  | { outcome: 'not_found' }
  | { outcome: 'not_approved'; status: string };

/** An owner's one-time sign-in link for a partner approved in the program; the token is returned once. */
export async function createPortalLink(db: Database, programId: number, partnerId: number, by: AuditContext): Promise<PortalLinkOutcome> {
  return db.transaction(async (tx): Promise<PortalLinkOutcome> => {
    const record = await tx.one<{ status: string }>(q.approved, [programId, partnerId]);
    if (!record) return { outcome: 'not_found' };
    if (record.status !== 'approved') return { outcome: 'not_approved', status: record.status };
    const token = newPortalLinkToken();
    const { expires_at: expiresAt } = (await tx.one<{ expires_at: Date }>(q.link, [hashSecret(token), partnerId, programId, PORTAL_LINK_LIFETIME_MS]))!;
    await recordAudit(tx, by, {
      action: 'partner.portal_link_created',
      programId,
      target: { type: 'partner', id: partnerId },
      before: null,
      after: { partner_id: partnerId, expires_at: expiresAt },
    });
    return { outcome: 'created', token, expiresAt };
  });
}

export type SignInOutcome =
  | { outcome: 'signed_in'; sessionToken: string; session: PortalSession }
  | { outcome: 'expired' }
  | { outcome: 'used' }
  | { outcome: 'unknown' };

/**
 * Follows a sign-in link: spends it, opens a portal session and notes the client address the
 * partner signed in from (the fraud rule partner_ip reads it), in one transaction.
 */
export async function signInWithLink(db: Database, token: string, clientIp: string): Promise<SignInOutcome> {
  return db.transaction(async (tx): Promise<SignInOutcome> => {
    const hash = hashSecret(token);
    const spent = await tx.one<PortalSession>(q.consume, [hash]);
    if (!spent) {
      const why = await tx.one<{ used: boolean; expired: boolean }>(q.why, [hash]);
      if (!why) return { outcome: 'unknown' };
      // A link whose partner is no longer approved is no use either: told as unknown.
      return why.used ? { outcome: 'used' } : why.expired ? { outcome: 'expired' } : { outcome: 'unknown' };
    }
    const session: PortalSession = { partnerId: Number(spent.partnerId), programId: Number(spent.programId), workspaceId: Number(spent.workspaceId) };
    const sessionToken = newPortalSessionToken();
    await tx.many(q.session, [hashSecret(sessionToken), session.partnerId, session.workspaceId, session.programId, PORTAL_SESSION_LIFETIME_MS]);
    await recordPartnerSignInAddress(tx, { partnerId: session.partnerId, clientIp });
    return { outcome: 'signed_in', sessionToken, session };
  });
}

/** The live session of a token; one lookup by its hash. */
export async function portalSessionOf(db: Queryable, token: string): Promise<PortalSession | undefined> {
  const row = await db.one<PortalSession>(q.find, [hashSecret(token)]);
  return row && { partnerId: Number(row.partnerId), workspaceId: Number(row.workspaceId), programId: Number(row.programId) };
}

/** Sign-out: the session stops working at once. */
export async function revokePortalSession(db: Queryable, token: string): Promise<boolean> {
  return (await db.many(q.revoke, [hashSecret(token)])).length > 0;
}

/** Every portal session of a partner (a ban), inside the caller's transaction; how many ended. */
export async function revokePartnerSessions(tx: Queryable, partnerId: number): Promise<number> {
  return (await tx.many(q.revokePartner, [partnerId])).length;
}
