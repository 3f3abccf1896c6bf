/**
 * A partner's referral links in a program (issue 31, point 3): several per partner, each with its
 * own aff code (the brand's, unique across the service, or a generated one), listed, turned off
 * and on; and the sub-id link builder the console and the portal show. The URL shape is in
 * docs/decisions/links-and-promo-codes.md: the program's site (or a landing page on it) with
 * `?aff=<code>` and any of `sub1`..`sub5`.
 */
import { randomBytes } from 'node:crypto';
import { isUniqueViolation, sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';

/** A link as the brand's and the partner's routes show it. */
export interface PartnerLink {
  id: number;
  aff_code: string;
  enabled: boolean;
  created_at: Date;
  /** The program's domain, for the link's URL (buildPartnerLinkUrl). */
  domain: string;
}

const LINK = `l.id::int AS id, l.aff_code, l.enabled, l.created_at, p.domain`;

const q = {
  // The CLI's synthetic test partner (cli_test_fixtures) is the service's, never the brand's.
  junction: sql(
    'partner_links.junction',
    `SELECT pp.id, pp.partner_id FROM partner_programs pp
      WHERE pp.program_id = $1 AND pp.partner_id = $2
        AND NOT EXISTS (SELECT 1 FROM cli_test_fixtures f WHERE f.program_id = $1 AND f.partner_program_id = pp.id)`,
  ),
  list: sql(
    'partner_links.list',
    `SELECT ${LINK} FROM referral_links l JOIN programs p ON p.id = l.program_id
      WHERE l.program_id = $1 AND l.partner_program_id = $2 ORDER BY l.id`,
  ),
  insert: sql(
    'partner_links.insert',
    `WITH l AS (
       INSERT INTO referral_links (aff_code, program_id, partner_id, partner_program_id) VALUES ($1, $2, $3, $4)
       RETURNING id, aff_code, enabled, created_at, program_id
     )
     SELECT ${LINK} FROM l JOIN programs p ON p.id = l.program_id`,
  ),
  lock: sql(
    'partner_links.lock',
    `SELECT ${LINK} FROM referral_links l JOIN programs p ON p.id = l.program_id
      WHERE l.id = $1 AND l.program_id = $2 AND l.partner_program_id = $3
      FOR UPDATE OF l`,
  ),
  set: sql('partner_links.set_enabled', `UPDATE referral_links SET enabled = $2, updated_at = now() WHERE id = $1`),
};

/** A generated aff code: 8 letters and digits (about 47 bits). */
export const newAffCode = () => randomBytes(6).toString('base64url').replace(/[-_]/g, 'x');

/** The partner's record in the program, or partner_not_found (unknown, another program's, the CLI's test partner). */
async function junctionOf(db: Queryable, programId: number, partnerId: number): Promise<{ id: number }> {
  const junction = await db.one<{ id: number }>(q.junction, [programId, partnerId]);
  if (!junction) throw refused({ reason: 'partner_not_found' });
  return junction;
}

const view = (l: PartnerLink): PartnerLink => ({ id: Number(l.id), aff_code: l.aff_code, enabled: l.enabled, created_at: l.created_at, domain: l.domain });

/** The partner's links in the program, oldest first; partner_not_found when it has no record there. */
export async function listPartnerLinks(db: Queryable, programId: number, partnerId: number): Promise<PartnerLink[]> {
  const junction = await junctionOf(db, programId, partnerId);
  return (await db.many<PartnerLink>(q.list, [programId, junction.id])).map(view);
}

const auditView = (l: PartnerLink, partnerId: number) => ({ id: l.id, aff_code: l.aff_code, partner_id: partnerId, enabled: l.enabled });

/** Another link for the partner: its own aff code (aff_code_taken when any link has it) or a generated one. */
export async function createPartnerLink(db: Database, programId: number, partnerId: number, affCode: string | undefined, by: AuditContext): Promise<PartnerLink> {
  try {
    return await db.transaction(async (tx) => {
      const junction = await junctionOf(tx, programId, partnerId);
      const link = view((await tx.one<PartnerLink>(q.insert, [affCode ?? newAffCode(), programId, partnerId, junction.id]))!);
      await recordAudit(tx, by, { action: 'link.created', programId, target: { type: 'link', id: link.aff_code }, before: null, after: auditView(link, partnerId) });
      return link;
    });
  } catch (error) {
    if (isUniqueViolation(error, 'referral_links_aff_code_key')) throw refused({ reason: 'aff_code_taken' });
    throw error;
  }
}

/**
 * Turns one of the partner's links off (its clicks answer 410 link_disabled) or on. A link of
 * another partner or program is partner_link_not_found; setting the state it has writes nothing.
 */
export async function setPartnerLinkEnabled(db: Database, programId: number, partnerId: number, linkId: number, enabled: boolean, by: AuditContext): Promise<PartnerLink> {
  return db.transaction(async (tx) => {
    const junction = await junctionOf(tx, programId, partnerId);
    const before = await tx.one<PartnerLink>(q.lock, [linkId, programId, junction.id]);
    if (!before) throw refused({ reason: 'partner_link_not_found' });
    const link = view(before);
    if (link.enabled === enabled) return link;
    await tx.many(q.set, [linkId, enabled]);
    const after = { ...link, enabled };
    await recordAudit(tx, by, {
      action: enabled ? 'link.enabled' : 'link.disabled',
      programId,
      target: { type: 'link', id: link.aff_code },
      before: auditView(link, partnerId),
      after: auditView(after, partnerId),
    });
    return after;
  });
}

/** The most characters a sub-id keeps (partner-program.md, "Promo codes and sub-ids"). */
export const SUB_ID_MAX = 100;

export interface LinkUrlOptions {
  /** A page of the program's site (its domain or a subdomain), http or https; default the site's root. */
  landingUrl?: string | undefined;
  sub1?: string | undefined;
  sub2?: string | undefined;
  sub3?: string | undefined;
  sub4?: string | undefined;
  sub5?: string | undefined;
}

export type LinkUrl = { ok: true; url: string } | { ok: false; problem: 'landing_url' | 'sub_id' };

/** The program's site as an origin: the domain is a host name (ingest/management/schemas.ts). */
const siteOf = (domain: string) => (/^https?:\/\//.test(domain) ? domain : `https://${domain}`);
const onSite = (host: string, domain: string) => {
  const site = new URL(siteOf(domain)).hostname.toLowerCase();
  const h = host.toLowerCase();
  return h === site || h.endsWith(`.${site}`);
};

/**
 * The URL a partner shares: `https://<program domain>/?aff=<code>&sub1=…` (or the landing page
 * given, which must be on the program's site: a link never sends a visitor elsewhere). Sub-ids are
 * optional, at most 100 characters each (the click keeps no more); empty ones are left out. Any
 * query of the landing page is kept, its own aff and sub-ids replaced.
 */
export function buildPartnerLinkUrl(link: { aff_code: string; domain: string }, o: LinkUrlOptions = {}): LinkUrl {
  let url: URL;
  try {
    url = new URL(o.landingUrl ?? siteOf(link.domain));
  } catch {
    return { ok: false, problem: 'landing_url' };
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) return { ok: false, problem: 'landing_url' };
  if (o.landingUrl !== undefined && !onSite(url.hostname, link.domain)) return { ok: false, problem: 'landing_url' };
  const subs = [o.sub1, o.sub2, o.sub3, o.sub4, o.sub5];
  if (subs.some((s) => s !== undefined && s.length > SUB_ID_MAX)) return { ok: false, problem: 'sub_id' };
  url.searchParams.set('aff', link.aff_code);
  subs.forEach((s, i) => {
    url.searchParams.delete(`sub${i + 1}`);
    if (s !== undefined && s !== '') url.searchParams.set(`sub${i + 1}`, s);
  });
  return { ok: true, url: url.toString() };
}
