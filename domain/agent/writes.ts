/**
 * The writes an agent may make (issue 13): create a partner with its referral link, turn a link on
 * or off, run a synthetic test event. None moves money: no sale, refund, commission or fee is
 * written. Each write is idempotent by a natural key and leaves an audit entry naming the key, in
 * the same transaction as the write itself.
 */
import { isUniqueViolation, sql, type Database, type Queryable } from '../../core/db.js';
import { refused } from '../errors.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { insertPartner, linkEntry, partnerCreatedEntry } from '../programs/programs.js';
import { logTestEvent, type TestEventType } from '../tracking/test-events.js';

/** Who writes: the agent key and its workspace. */
export interface AgentActor {
  keyId: number;
  workspaceId: number;
}

export type WriteOutcome = 'created' | 'existing' | 'updated' | 'unchanged';

const q = {
  audit: sql(
    'agent_audit.insert',
    `INSERT INTO agent_audit_log (key_id, workspace_id, program_id, action, target, outcome, natural_key, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  ),
  // The test event's reference is its idempotency key: a second insert of it does nothing.
  claimTestEvent: sql(
    'agent_audit.claim_test_event',
    `INSERT INTO agent_audit_log (key_id, workspace_id, program_id, action, target, outcome, natural_key, details)
     VALUES ($1, $2, $3, 'test_event.run', $4, 'created', $5, $6)
     ON CONFLICT (program_id, natural_key) WHERE action = 'test_event.run' DO NOTHING
     RETURNING id, created_at`,
  ),
  testEvent: sql(
    'agent_audit.test_event',
    `SELECT details, created_at FROM agent_audit_log WHERE program_id = $1 AND action = 'test_event.run' AND natural_key = $2`,
  ),
  linkByCode: sql(
    'agent.link_by_code',
    `SELECT l.program_id, l.partner_id, l.partner_program_id, l.enabled, p.name, p.email, pp.status
       FROM referral_links l LEFT JOIN partners p ON p.id = l.partner_id LEFT JOIN partner_programs pp ON pp.id = l.partner_program_id
      WHERE l.aff_code = $1`,
  ),
  lockLink: sql(
    'agent.lock_link',
    `SELECT aff_code, enabled, partner_id FROM referral_links WHERE program_id = $1 AND aff_code = $2 FOR UPDATE`,
  ),
  setLink: sql(
    'agent.set_link',
    `UPDATE referral_links SET enabled = $3, updated_at = now() WHERE program_id = $1 AND aff_code = $2`,
  ),
};

async function audit(tx: Queryable, actor: AgentActor, programId: number, action: string, target: string, outcome: WriteOutcome, details: object) {
  await tx.many(q.audit, [actor.keyId, actor.workspaceId, programId, action, target, outcome, null, JSON.stringify(details)]);
}

export interface AgentPartnerInput {
  name: string;
  email?: string;
  affCode: string;
}

export interface AgentPartner {
  outcome: 'created' | 'existing';
  partnerId: number;
  partnerProgramId: number;
  affCode: string;
  status: string;
}

/**
 * A partner with an approved partner-program record and its referral link. The aff_code is the
 * natural key: sent again with the same name and email it answers the partner it created
 * (`existing`, nothing written but the audit entry); a code used otherwise is refused.
 */
export async function createAgentPartner(db: Database, actor: AgentActor, programId: number, input: AgentPartnerInput, by: AuditContext): Promise<AgentPartner> {
  const attempt = () =>
    db.transaction(async (tx) => {
      const link = await tx.one<{ program_id: number | null; partner_id: number | null; partner_program_id: number | null; name: string | null; email: string | null; status: string | null }>(
        q.linkByCode,
        [input.affCode],
      );
      if (link) {
        const same =
          Number(link.program_id) === programId && link.partner_id !== null && link.partner_program_id !== null && link.name === input.name && (link.email ?? undefined) === input.email;
        if (!same) throw refused({ reason: 'aff_code_taken' });
        const existing: AgentPartner = {
          outcome: 'existing',
          partnerId: Number(link.partner_id),
          partnerProgramId: Number(link.partner_program_id),
          affCode: input.affCode,
          status: link.status ?? 'approved',
        };
        await audit(tx, actor, programId, 'partner.create', input.affCode, 'existing', { partner_id: existing.partnerId });
        return existing;
      }
      const created = await insertPartner(tx, programId, { name: input.name, email: input.email, affCode: input.affCode });
      await audit(tx, actor, programId, 'partner.create', input.affCode, 'created', { partner_id: created.partnerId, name: input.name });
      await recordAudit(tx, by, partnerCreatedEntry(programId, input, created));
      return { outcome: 'created' as const, ...created };
    });
  try {
    return await attempt();
  } catch (error) {
    // Two identical requests at once: the loser's insert hits the unique code; read the winner's.
    if (isUniqueViolation(error, 'referral_links_aff_code_key')) return attempt();
    throw error;
  }
}

/** Turns a referral link of the program on or off; setting the state it already has changes nothing. */
export async function setAgentLink(db: Database, actor: AgentActor, programId: number, affCode: string, enabled: boolean, by: AuditContext) {
  return db.transaction(async (tx) => {
    const link = await tx.one<{ aff_code: string; enabled: boolean; partner_id: number | null }>(q.lockLink, [programId, affCode]);
    if (!link) throw refused({ reason: 'link_not_found' });
    const outcome: WriteOutcome = link.enabled === enabled ? 'unchanged' : 'updated';
    if (outcome === 'updated') {
      await tx.many(q.setLink, [programId, affCode, enabled]);
      await recordAudit(tx, by, linkEntry(programId, link, link.enabled, enabled));
    }
    await audit(tx, actor, programId, enabled ? 'link.enable' : 'link.disable', affCode, outcome, { enabled });
    return { outcome, affCode, enabled };
  });
}

export interface AgentTestEvent {
  outcome: 'created' | 'existing';
  eventType: TestEventType;
  reference: string;
  createdAt: Date;
}

/**
 * A synthetic test event: the test entry of the tracking log (and its test_event.logged event)
 * that the integration checklist and readiness count, as a test click, lead or sale would write.
 * The reference is the idempotency key, per program: sent again, it answers the first run.
 */
export async function runAgentTestEvent(db: Database, actor: AgentActor, programId: number, eventType: TestEventType, reference: string): Promise<AgentTestEvent> {
  return db.transaction(async (tx) => {
    const claimed = await tx.one<{ id: number; created_at: Date }>(q.claimTestEvent, [
      actor.keyId,
      actor.workspaceId,
      programId,
      eventType,
      reference,
      JSON.stringify({ event_type: eventType }),
    ]);
    if (!claimed) {
      const first = (await tx.one<{ details: { event_type: TestEventType } | string; created_at: Date }>(q.testEvent, [programId, reference]))!;
      const details = typeof first.details === 'string' ? (JSON.parse(first.details) as { event_type: TestEventType }) : first.details;
      return { outcome: 'existing', eventType: details.event_type, reference, createdAt: first.created_at };
    }
    await logTestEvent(tx, programId, eventType, `agent:${reference}`);
    return { outcome: 'created', eventType, reference, createdAt: claimed.created_at };
  });
}
