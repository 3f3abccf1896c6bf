/**
 * The audit log (issue 32, point 6; partner-program.md, "Audit log"): every brand-side write
 * appends one entry (actor, action, target, before, after, request id, time) through
 * `recordAudit`, inside the transaction of the write itself, so the two commit or roll back
 * together and a refused write leaves no entry. The table refuses UPDATE, DELETE and TRUNCATE
 * (schemas/postgres/functions/refuse_changes_to_append_only_table.sql). docs/decisions/audit-log.md.
 */
import { sql, type Queryable } from '../../core/db.js';
import type { Principal } from '../access/access.js';

/**
 * Who wrote: a user (dashboard session or CLI account), an agent key, or the service itself
 * seeding data outside any request (the demo program, benchmarks), named by what seeded it.
 */
export type Actor = { type: 'user'; id: number } | { type: 'agent'; id: number } | { type: 'system'; id: string };

/** What a write needs to name its entry: who, and the request that asked for it. */
export interface AuditContext {
  actor: Actor;
  requestId: string;
}

/** The context of a write the service makes itself (`demo`, `bench`): its name stands for the request id too. */
export const systemContext = (name: string): AuditContext => ({ actor: { type: 'system', id: name }, requestId: name });

/** The actions of the log, by target: one name per kind of write, in the past tense. */
export const AUDIT_ACTIONS = [
  'program.created',
  'program.updated',
  'program.api_key_generated',
  'program.origin_added',
  'program.origin_removed',
  'partner.created',
  // Issue 31: an owner's decision on a partner, and a portal sign-in link made for one.
  'partner.approved',
  'partner.rejected',
  'partner.banned',
  'partner.portal_link_created',
  'link.created',
  'link.enabled',
  'link.disabled',
  // Issue 31, point 4: a partner's promo codes.
  'promo_code.created',
  'promo_code.enabled',
  'promo_code.disabled',
  'processor_connection.connected',
  'processor_connection.disconnected',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.tested',
  'webhook_delivery.redelivered',
  'team.invite_created',
  'team.invite_revoked',
  'team.invite_accepted',
  'team.role_changed',
  'team.member_removed',
  'commission.approved',
  'commission.rejected',
  'ledger.adjusted',
  'program.payout_settings_updated',
  'payout_method.updated',
  'payout.created',
  'payout.paid',
  'payout.canceled',
  // Issue 30: partner groups and a partner moved between them (terms changes are program.updated and group.*).
  'group.created',
  'group.updated',
  'group.deleted',
  'partner.group_changed',
  // Issue 30: a workspace's own exchange rates loaded by an owner (the operator's have no actor here).
  'fx_rates.imported',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  action: AuditAction;
  /** The program written to; null for a workspace's own writes (team, invites), then workspaceId names it. */
  programId: number | null;
  workspaceId?: number;
  target: { type: string; id: string | number };
  /** The target's state before the write (null when it did not exist) and after (null once gone). */
  before: unknown;
  after: unknown;
}

/** The Principal of a request as the log names it; a program key writes tracking data, never the settings the log covers. */
export function actorOf(principal: Principal): Actor {
  switch (principal.kind) {
    case 'session':
    case 'account':
      return { type: 'user', id: principal.userId };
    case 'agentKey':
      return { type: 'agent', id: Number(principal.keyId) };
    case 'programKey':
      throw new Error('a program key makes no audited write');
  }
}

export const REDACTED = '[redacted]';

// Fields whose value is a credential or derived from one, whatever the target: key hashes, webhook
// and processor secrets, tokens, sealed values. Masked forms (`api_token_masked`) stay readable.
const SECRET_FIELD = /(secret|token|password|hash|sealed|api_key|apikey|credential)s?$/i;
const SAFE_FIELD = /_masked$/i;
// Values that are credentials by their form, whatever their field's name: webhook secrets, program
// and agent keys and session tokens (domain/access/secrets.ts), values sealed by core/secret-box.ts.
const SECRET_VALUE = /^(whsec_\S+|(aff|agt|dsh)_[A-Za-z0-9_-]{32}|v1\.[A-Za-z0-9_-]{40,})$/;

/**
 * The state as stored in the log: dates as ISO text, secrets replaced by `[redacted]`. Callers pass
 * the views the API answers with (which already hold no secret); this is the second guard.
 */
export function redact(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? REDACTED : value;
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(redact);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (v === undefined) continue;
      out[key] = SECRET_FIELD.test(key) && !SAFE_FIELD.test(key) && v !== null ? REDACTED : redact(v);
    }
    return out;
  }
  return value;
}

// The label is read by the actor's own key ($11 a user id, $12 an agent key id, else null), never by
// casting actor_id: a system actor's id is not a number.
const insert = sql(
  'audit_log.insert',
  `INSERT INTO audit_log (workspace_id, program_id, actor_type, actor_id, actor_label, action, target_type, target_id, before, after, request_id)
   SELECT coalesce($1::bigint, (SELECT workspace_id FROM programs WHERE id = $2::bigint)), $2::bigint, $3::text, $4::text,
          coalesce((SELECT email FROM users WHERE id = $11::bigint), (SELECT name FROM agent_keys WHERE id = $12::bigint)),
          $5, $6, $7, $8::jsonb, $9::jsonb, $10`,
);

/** Appends the entry inside `tx`, the transaction of the write it records. */
export async function recordAudit(tx: Queryable, by: AuditContext, entry: AuditEntry): Promise<void> {
  // A program that does not exist (the write would have refused it) leaves workspace_id null: the insert fails.
  await tx.many(insert, [
    entry.workspaceId ?? null,
    entry.programId,
    by.actor.type,
    String(by.actor.id),
    entry.action,
    entry.target.type,
    String(entry.target.id),
    entry.before === null || entry.before === undefined ? null : JSON.stringify(redact(entry.before)),
    entry.after === null || entry.after === undefined ? null : JSON.stringify(redact(entry.after)),
    by.requestId,
    by.actor.type === 'user' ? by.actor.id : null,
    by.actor.type === 'agent' ? by.actor.id : null,
  ]);
}
