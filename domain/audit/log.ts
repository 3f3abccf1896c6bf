/**
 * Reading the audit log: a program's entries newest first, in cursor pages, with its workspace's
 * own entries (team, invites) beside them, since those change who may act on the program.
 */
import { sql, type Queryable } from '../../core/db.js';

export interface AuditEntryView {
  id: string;
  program_id: number | null;
  actor_type: 'user' | 'agent' | 'system';
  actor_id: string;
  actor_label: string | null;
  action: string;
  target_type: string;
  target_id: string;
  before: unknown;
  after: unknown;
  request_id: string;
  created_at: Date;
  /** created_at as Postgres prints it, for the page cursor. */
  position_at: string;
}

const page = sql(
  'audit_log.page',
  `SELECT a.id::text AS id, a.program_id, a.actor_type, a.actor_id, a.actor_label, a.action, a.target_type, a.target_id,
          a.before, a.after, a.request_id, a.created_at, a.created_at::text AS position_at
     FROM audit_log a
    WHERE (a.program_id = $1 OR (a.program_id IS NULL AND a.workspace_id = (SELECT workspace_id FROM programs WHERE id = $1)))
      AND ($2::timestamptz IS NULL OR (a.created_at, a.id) < ($2::timestamptz, $3::bigint))
    ORDER BY a.created_at DESC, a.id DESC LIMIT $4`,
);

export interface AuditPageQuery {
  /** The last entry of the previous page (its created_at as Postgres prints it, and its id). */
  after?: { at: string; id: string };
  limit: number;
}

/** One page, newest first; `more` when another page follows. */
export async function auditPage(db: Queryable, programId: number, query: AuditPageQuery): Promise<{ entries: AuditEntryView[]; more: boolean }> {
  const rows = await db.many<AuditEntryView>(page, [programId, query.after?.at ?? null, query.after?.id ?? null, query.limit + 1]);
  return { entries: rows.slice(0, query.limit), more: rows.length > query.limit };
}
