/**
 * A partner's state in a program (partner-program.md, "Partners, applications and the portal"):
 * pending (applied), approved, rejected, banned; `removed` stays for older rows. Owners approve,
 * reject or ban. Approving gives a partner without a link its first one (so it can earn); banning
 * disables its links at once (clicks answer 410 link_disabled), holds its pending and approved
 * commissions (hold_partner_commissions) and ends its portal sessions.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import { partnerApproved, partnerProgramChanged, type OutboxEvent } from '../../schemas/event-contract.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { appendEvents } from '../outbox.js';
import { newAffCode } from './links.js';
import { revokePartnerSessions } from './portal-sessions.js';

export type PartnerDecision = 'approve' | 'reject' | 'ban';
export type PartnerState = 'pending' | 'approved' | 'rejected' | 'banned' | 'removed';

/** Which states each decision may start from; deciding what is already so changes nothing. */
const FROM: Record<PartnerDecision, readonly PartnerState[]> = {
  approve: ['pending', 'rejected'],
  reject: ['pending'],
  ban: ['pending', 'approved', 'rejected', 'removed'],
};
const TO: Record<PartnerDecision, PartnerState> = { approve: 'approved', reject: 'rejected', ban: 'banned' };

export interface PartnerStateView {
  partner_id: number;
  partner_program_id: number;
  program_id: number;
  status: PartnerState;
  links_disabled: number;
  commissions_held: number;
  sessions_revoked: number;
  link_created: string | null;
}

export type DecisionOutcome =
  | { outcome: 'ok'; view: PartnerStateView; changed: boolean }
  | { outcome: 'not_found' }
  | { outcome: 'conflict'; status: PartnerState };

interface Record_ {
  id: number;
  partner_id: number;
  program_id: number;
  status: PartnerState;
  created_at: Date;
  updated_at: Date;
  name: string;
  email: string | null;
}

const q = {
  lock: sql(
    'partner_states.lock',
    `SELECT pp.id, pp.partner_id, pp.program_id, pp.status, pp.created_at, pp.updated_at, pa.name, pa.email
       FROM partner_programs pp JOIN partners pa ON pa.id = pp.partner_id
      WHERE pp.program_id = $1 AND pp.partner_id = $2
      FOR UPDATE OF pp`,
  ),
  set: sql(
    'partner_states.set',
    `UPDATE partner_programs SET status = $2, updated_at = now() WHERE id = $1
     RETURNING id, partner_id, program_id, status, created_at, updated_at`,
  ),
  hasLink: sql('partner_states.has_link', `SELECT 1 FROM referral_links WHERE program_id = $1 AND partner_id = $2 LIMIT 1`),
  link: sql(
    'partner_states.first_link',
    `INSERT INTO referral_links (aff_code, program_id, partner_id, partner_program_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (aff_code) DO NOTHING RETURNING aff_code`,
  ),
  disableLinks: sql(
    'partner_states.disable_links',
    `UPDATE referral_links SET enabled = false, updated_at = now() WHERE program_id = $1 AND partner_id = $2 AND enabled RETURNING id`,
  ),
  hold: sql('partner_states.hold', `SELECT hold_partner_commissions($1::bigint, $2::bigint, $3::text) AS held`),
};


async function firstLink(tx: Queryable, r: Record_): Promise<string | null> {
  if (await tx.one(q.hasLink, [r.program_id, r.partner_id])) return null;
  // A random 8-character code; a code already taken (a few in 10^14) is skipped, not an error.
  for (;;) {
    const row = await tx.one<{ aff_code: string }>(q.link, [newAffCode(), r.program_id, r.partner_id, r.id]);
    if (row) return row.aff_code;
  }
}

/** An owner's approve, reject or ban of a partner of the program, with its effects and audit entry. */
export async function decidePartner(db: Database, programId: number, partnerId: number, decision: PartnerDecision, by: AuditContext): Promise<DecisionOutcome> {
  return db.transaction(async (tx): Promise<DecisionOutcome> => {
    const found = await tx.one<Record_>(q.lock, [programId, partnerId]);
    if (!found) return { outcome: 'not_found' };
    const before: Record_ = { ...found, id: Number(found.id), partner_id: Number(found.partner_id), program_id: Number(found.program_id) };
    const view: PartnerStateView = {
      partner_id: before.partner_id,
      partner_program_id: before.id,
      program_id: before.program_id,
      status: before.status,
      links_disabled: 0,
      commissions_held: 0,
      sessions_revoked: 0,
      link_created: null,
    };
    if (before.status === TO[decision]) return { outcome: 'ok', view, changed: false };
    if (!FROM[decision].includes(before.status)) return { outcome: 'conflict', status: before.status };

    const row = (await tx.one<Record_>(q.set, [before.id, TO[decision]]))!;
    const after = { ...row, id: before.id, partner_id: before.partner_id, program_id: before.program_id };
    view.status = after.status;
    const events: OutboxEvent[] = [partnerProgramChanged(after)];
    if (decision === 'approve') {
      view.link_created = await firstLink(tx, before);
      events.push(
        partnerApproved({
          partner_program_id: before.id,
          partner_id: before.partner_id,
          program_id: before.program_id,
          name: before.name,
          email: before.email,
          approved_at: after.updated_at,
        }),
      );
    }
    if (decision === 'ban') {
      view.links_disabled = (await tx.many(q.disableLinks, [programId, partnerId])).length;
      view.commissions_held = Number((await tx.one<{ held: number | null }>(q.hold, [programId, partnerId, 'partner_banned']))?.held ?? 0);
      view.sessions_revoked = await revokePartnerSessions(tx, partnerId);
    }
    await appendEvents(tx, events);
    await recordAudit(tx, by, {
      action: decision === 'approve' ? 'partner.approved' : decision === 'reject' ? 'partner.rejected' : 'partner.banned',
      programId,
      target: { type: 'partner', id: partnerId },
      before: { status: before.status },
      after: {
        status: view.status,
        ...(view.link_created ? { link_created: view.link_created } : {}),
        ...(decision === 'ban' ? { links_disabled: view.links_disabled, commissions_held: view.commissions_held, sessions_revoked: view.sessions_revoked } : {}),
      },
    });
    return { outcome: 'ok', view, changed: true };
  });
}
