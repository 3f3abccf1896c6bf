/**
 * The audit log's query and page (issue 32, point 6; partner-program.md, "Audit log"): one
 * definition for the console's route and the agent's operation.
 */
import { z } from 'zod';
import type { AuditEntryView } from '../../domain/audit/log.js';
import { listCursor } from '../agent/cursor.js';
import { M } from '../http/messages.js';

export const AuditCursor = listCursor('audit_log', 'postgres', 'bigint');

export const AuditQuery = z.strictObject(
  {
    limit: z.coerce.number({ error: M.audit.limit }).int(M.audit.limit).min(1, M.audit.limit).max(100, M.audit.limit).default(50).describe('Entries per page, 1 to 100 (default 50)'),
    cursor: AuditCursor.schema,
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys) : M.dashboard.badQuery) },
);

const state = z.record(z.string(), z.unknown()).nullable();

export const AuditEntry = z.object({
  id: z.string(),
  program_id: z.number().int().nullable().describe("null: a write to the program's workspace (its team and invites)"),
  actor: z.object({
    type: z.enum(['user', 'agent', 'system']),
    id: z.string().describe('The user id, the agent key id, or what the service seeded (demo)'),
    label: z.string().nullable().describe("The user's email or the agent key's name"),
  }),
  action: z.string().describe('What was done, e.g. program.updated, webhook_endpoint.secret_rotated, payout.paid'),
  target: z.object({ type: z.string(), id: z.string() }),
  before: state.describe('The target before the write (secrets redacted); null for a creation'),
  after: state.describe('The target after the write (secrets redacted); null for a deletion'),
  request_id: z.string().describe('The X-Request-ID of the write'),
  created_at: z.string(),
});

export const AuditPage = z.object({ data: z.array(AuditEntry), next_cursor: z.string().nullable() });

// PGlite may hand jsonb back as text.
const json = (value: unknown) => (typeof value === 'string' ? (JSON.parse(value) as unknown) : value);

export const auditEntryView = (e: AuditEntryView): z.output<typeof AuditEntry> => ({
  id: e.id,
  program_id: e.program_id === null ? null : Number(e.program_id),
  actor: { type: e.actor_type, id: e.actor_id, label: e.actor_label },
  action: e.action,
  target: { type: e.target_type, id: e.target_id },
  before: json(e.before) as Record<string, unknown> | null,
  after: json(e.after) as Record<string, unknown> | null,
  request_id: e.request_id,
  created_at: new Date(e.created_at).toISOString(),
});

/** A page of the log as both surfaces answer it. */
export const auditPageBody = (page: { entries: AuditEntryView[]; more: boolean }) => {
  const last = page.entries.at(-1);
  return { data: page.entries.map(auditEntryView), next_cursor: page.more && last ? AuditCursor.encode({ at: last.position_at, id: last.id }) : null };
};
