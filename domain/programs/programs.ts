import { randomBytes } from 'node:crypto';
import { isUniqueViolation, sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { issueProgramKey } from './api-keys.js';
import type { CommissionType } from '../tracking/commissions.js';
import { partnerProgramChanged } from '../../schemas/event-contract.js';
import { refused } from '../errors.js';
import { appendEvents } from '../outbox.js';
import { appendRuleVersion, termsDiffer, type Terms } from './terms.js';
import { setFraudRules, type FraudRules } from '../fraud/rules.js';

export type LeadAuth = 'server_required' | 'browser_allowed';
export type PaymentTrackingMode = 'processor_connect' | 's2s';

export interface ProgramSettings {
  name: string;
  domain: string;
  commission_type: CommissionType;
  commission_rate: number;
  /** Months after a customer's first purchase that recurring commissions are paid; null (or absent): lifetime. */
  recurring_months?: number | null;
  attribution_window_days: number;
  lead_auth: LeadAuth;
  paymentTrackingMode: PaymentTrackingMode;
  allowed_origins: string[];
  /** ISO 4217: the currency of the converted totals (issue 30); absent on create: USD. */
  reporting_currency?: string;
  /** Issue 31: the fraud rules on or off; on create and update only the rules named change (all on by default). */
  fraud_rules?: Partial<FraudRules>;
  /** Issue 31: whether /apply/:programId and POST /api/v1/partners/apply take applications (default false). */
  applications_open?: boolean;
}

export interface ProgramView extends ProgramSettings {
  applications_open: boolean;
  reporting_currency: string;
  recurring_months: number | null;
  id: number;
  workspace_id: number;
  api_token_masked: string | null;
  created_at: Date;
  updated_at: Date;
}

const PROGRAM_VIEW = `p.id, p.workspace_id, p.name, p.domain, p.commission_type, p.commission_rate, p.recurring_months, p.attribution_window_days,
  p.lead_auth, p.payment_tracking_mode AS "paymentTrackingMode", p.allowed_origins, p.reporting_currency,
  k.key_masked AS api_token_masked, p.created_at, p.updated_at, p.fraud_rules, p.applications_open`;

const q = {
  insert: sql(
    'programs.insert',
    `INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate, attribution_window_days,
                           lead_auth, payment_tracking_mode, allowed_origins, recurring_months)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
  ),
  // The program before a change, locked: the audit entry's before is the state the change replaced.
  lock: sql('programs.lock', `SELECT id FROM programs WHERE id = $1 FOR UPDATE`),
  view: sql('programs.view', `SELECT ${PROGRAM_VIEW} FROM programs p LEFT JOIN program_api_keys k ON k.program_id = p.id WHERE p.id = $1`),
  update: sql(
    'programs.update',
    `UPDATE programs SET
       name = COALESCE($2, name), domain = COALESCE($3, domain), commission_type = COALESCE($4, commission_type),
       commission_rate = COALESCE($5, commission_rate), attribution_window_days = COALESCE($6, attribution_window_days),
       lead_auth = COALESCE($7, lead_auth), payment_tracking_mode = COALESCE($8, payment_tracking_mode),
       allowed_origins = COALESCE($9, allowed_origins),
       recurring_months = CASE WHEN $10::boolean THEN $11::integer ELSE recurring_months END,
       reporting_currency = COALESCE($12, reporting_currency), updated_at = now()
     WHERE id = $1`,
  ),
  applicationsOpen: sql('programs.applications_open', `UPDATE programs SET applications_open = $2 WHERE id = $1`),
  partner: sql('partners.insert', `INSERT INTO partners (name, email) VALUES ($1, $2) RETURNING id`),
  junction: sql(
    'partner_programs.insert',
    `INSERT INTO partner_programs (partner_id, program_id, status) VALUES ($1, $2, 'approved')
     RETURNING id, partner_id, program_id, status, created_at, updated_at`,
  ),
  link: sql(
    'referral_links.insert',
    `INSERT INTO referral_links (aff_code, program_id, partner_id, partner_program_id) VALUES ($1, $2, $3, $4)`,
  ),
  lockLink: sql('referral_links.lock', `SELECT aff_code, enabled, partner_id FROM referral_links WHERE program_id = $1 AND aff_code = $2 FOR UPDATE`),
  setLink: sql(
    'referral_links.set_enabled',
    `UPDATE referral_links SET enabled = $3, updated_at = now() WHERE program_id = $1 AND aff_code = $2
     RETURNING aff_code, enabled, partner_id`,
  ),
};

/** The link a partner shares: the program's domain with ?aff=. */
export function referralUrl(domain: string, affCode: string): string {
  try {
    const url = new URL(/^https?:\/\//.test(domain) ? domain : `https://${domain}`);
    url.searchParams.set('aff', affCode);
    return url.toString();
  } catch {
    return `https://${domain}/?aff=${encodeURIComponent(affCode)}`;
  }
}

export async function getProgram(db: Queryable, programId: number): Promise<ProgramView | undefined> {
  return db.one<ProgramView>(q.view, [programId]);
}

/** A new program with its key (created now, shown only by a later generate request). */
export async function createProgram(db: Database, workspaceId: number, s: ProgramSettings, by: AuditContext): Promise<ProgramView> {
  return db.transaction(async (tx) => {
    const { id } = (await tx.one<{ id: number }>(q.insert, [
      workspaceId, s.name, s.domain, s.commission_type, s.commission_rate, s.attribution_window_days, s.lead_auth,
      s.paymentTrackingMode, s.allowed_origins, s.recurring_months ?? null,
    ]))!;
    await issueProgramKey(tx, id);
    if (s.fraud_rules) await setFraudRules(tx, id, s.fraud_rules);
    // Version 1 of its terms, in effect from now (issue 30).
    await appendRuleVersion(tx, { programId: id, groupId: null, terms: termsOf(s), effectiveFrom: undefined, by });
    const program = (await getProgram(tx, id))!;
    await recordAudit(tx, by, { action: 'program.created', programId: id, target: { type: 'program', id }, before: null, after: program });
    return program;
  });
}

const termsOf = (s: Pick<ProgramSettings, 'commission_type' | 'commission_rate' | 'recurring_months'>): Terms => ({
  commission_type: s.commission_type,
  commission_rate: Number(s.commission_rate),
  recurring_months: s.recurring_months ?? null,
});

/**
 * Settings and commission terms alike; the audit entry holds the whole program before and after.
 * Terms that change append a rule version (issue 30) in effect from `termsEffectiveFrom` (now when
 * undefined); the program's row shows the latest version's terms.
 */
export async function updateProgram(
  db: Database,
  programId: number,
  s: Partial<ProgramSettings> & { termsEffectiveFrom?: Date | undefined },
  by: AuditContext,
): Promise<ProgramView> {
  return db.transaction(async (tx) => {
    await tx.many(q.lock, [programId]);
    const before = await getProgram(tx, programId);
    if (before) {
      const next = termsOf({
        commission_type: s.commission_type ?? before.commission_type,
        commission_rate: s.commission_rate ?? before.commission_rate,
        recurring_months: s.recurring_months !== undefined ? s.recurring_months : before.recurring_months,
      });
      if (termsDiffer(termsOf(before), next)) {
        await appendRuleVersion(tx, { programId, groupId: null, terms: next, effectiveFrom: s.termsEffectiveFrom, by });
      }
    }
    await tx.many(q.update, [
      programId, s.name ?? null, s.domain ?? null, s.commission_type ?? null, s.commission_rate ?? null,
      s.attribution_window_days ?? null, s.lead_auth ?? null, s.paymentTrackingMode ?? null, s.allowed_origins ?? null,
      s.recurring_months !== undefined, s.recurring_months ?? null, s.reporting_currency ?? null,
    ]);
    if (s.fraud_rules) await setFraudRules(tx, programId, s.fraud_rules);
    if (s.applications_open !== undefined) await tx.many(q.applicationsOpen, [programId, s.applications_open]);
    const after = (await getProgram(tx, programId))!;
    await recordAudit(tx, by, { action: 'program.updated', programId, target: { type: 'program', id: programId }, before, after });
    return after;
  });
}

export interface NewPartner {
  name: string;
  email: string | undefined;
  affCode: string | undefined;
}

export interface CreatedPartner {
  partnerId: number;
  partnerProgramId: number;
  affCode: string;
  status: string;
}

const newAffCode = () => randomBytes(6).toString('base64url').replace(/[-_]/g, 'x');

/** The writes of createPartner, inside the caller's transaction (the agent API adds its audit entry to it). */
export async function insertPartner(tx: Queryable, programId: number, p: NewPartner & { affCode: string }): Promise<CreatedPartner> {
  const { id: partnerId } = (await tx.one<{ id: number }>(q.partner, [p.name, p.email ?? null]))!;
  const junction = (await tx.one<{ id: number; partner_id: number; program_id: number; status: string; created_at: Date; updated_at: Date }>(
    q.junction,
    [partnerId, programId],
  ))!;
  await tx.many(q.link, [p.affCode, programId, partnerId, junction.id]);
  await appendEvents(tx, [partnerProgramChanged(junction)]);
  return { partnerId, partnerProgramId: junction.id, affCode: p.affCode, status: junction.status };
}

/** The audit entry of a new partner (console and agent alike). */
export const partnerCreatedEntry = (programId: number, p: { name: string; email?: string | undefined }, created: CreatedPartner) => ({
  action: 'partner.created' as const,
  programId,
  target: { type: 'partner', id: created.partnerId },
  before: null,
  after: { partner_id: created.partnerId, partner_program_id: created.partnerProgramId, name: p.name, email: p.email ?? null, aff_code: created.affCode, status: created.status },
});

/** A partner with an approved partner-program record and one referral link. */
export async function createPartner(db: Database, programId: number, p: NewPartner, by: AuditContext): Promise<CreatedPartner> {
  const affCode = p.affCode ?? newAffCode();
  try {
    return await db.transaction(async (tx) => {
      const created = await insertPartner(tx, programId, { ...p, affCode });
      await recordAudit(tx, by, partnerCreatedEntry(programId, p, created));
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error, 'referral_links_aff_code_key')) throw refused({ reason: 'aff_code_taken' });
    throw error;
  }
}

/** The audit entry of a link turned on or off (console and agent alike). */
export const linkEntry = (programId: number, link: { aff_code: string; partner_id: number | null }, before: boolean, after: boolean) => ({
  action: after ? ('link.enabled' as const) : ('link.disabled' as const),
  programId,
  target: { type: 'link', id: link.aff_code },
  before: { aff_code: link.aff_code, partner_id: link.partner_id, enabled: before },
  after: { aff_code: link.aff_code, partner_id: link.partner_id, enabled: after },
});

/** Turns a link on or off; setting the state it has writes nothing, so leaves no audit entry. */
export async function setLinkEnabled(db: Database, programId: number, affCode: string, enabled: boolean, by: AuditContext) {
  return db.transaction(async (tx) => {
    const before = await tx.one<{ aff_code: string; enabled: boolean; partner_id: number | null }>(q.lockLink, [programId, affCode]);
    if (!before) throw refused({ reason: 'link_not_found' });
    if (before.enabled === enabled) return before;
    const row = (await tx.one<{ aff_code: string; enabled: boolean; partner_id: number | null }>(q.setLink, [programId, affCode, enabled]))!;
    await recordAudit(tx, by, linkEntry(programId, row, before.enabled, row.enabled));
    return row;
  });
}
