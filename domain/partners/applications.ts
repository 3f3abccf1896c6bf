/**
 * Applications (partner-program.md, "Partners, applications and the portal"): someone asks to join
 * a program that takes applications and becomes a `pending` partner of it. One application per
 * email (ignoring case) and program; a partner already in the program under that email counts too.
 */
import { isUniqueViolation, sql, type Database, type Queryable } from '../../core/db.js';
import { partnerApplied, partnerProgramChanged } from '../../schemas/event-contract.js';
import { appendEvents } from '../outbox.js';

export interface Application {
  programId: number;
  name: string;
  email: string;
  website?: string | undefined;
  message?: string | undefined;
}

export type ApplicationOutcome =
  | { outcome: 'applied'; partnerId: number; partnerProgramId: number; programName: string }
  /** Unknown program, or one that does not take applications: the same answer, so ids cannot be probed. */
  | { outcome: 'not_found' }
  | { outcome: 'duplicate'; programName: string };

interface Junction {
  id: number;
  partner_id: number;
  program_id: number;
  status: string;
  created_at: Date;
  updated_at: Date;
}

const q = {
  program: sql('applications.program', `SELECT id, workspace_id, name FROM programs WHERE id = $1 AND applications_open`),
  // The email already in the program: an application, or a partner the brand created.
  taken: sql(
    'applications.taken',
    `SELECT 1 FROM partner_applications WHERE program_id = $1 AND email = $2
     UNION ALL
     SELECT 1 FROM partner_programs pp JOIN partners pa ON pa.id = pp.partner_id
      WHERE pp.program_id = $1 AND lower(pa.email) = $2
     LIMIT 1`,
  ),
  // A partner of another program of the same workspace with this email: the same partner (one
  // portal for both programs). Never across workspaces: decisions/partner-portal.md.
  samePartner: sql(
    'applications.same_partner',
    `SELECT pa.id FROM partners pa
       JOIN partner_programs pp ON pp.partner_id = pa.id
       JOIN programs p ON p.id = pp.program_id
      WHERE lower(pa.email) = $2 AND p.workspace_id = $1
      ORDER BY pa.id LIMIT 1`,
  ),
  partner: sql('applications.partner', `INSERT INTO partners (name, email) VALUES ($1, $2) RETURNING id`),
  junction: sql(
    'applications.junction',
    `INSERT INTO partner_programs (partner_id, program_id, status) VALUES ($1, $2, 'pending')
     RETURNING id, partner_id, program_id, status, created_at, updated_at`,
  ),
  list: sql(
    'applications.list',
    `SELECT a.partner_program_id, pp.partner_id, pa.name, a.email, a.website, a.message, pp.status, a.created_at
       FROM partner_applications a
       JOIN partner_programs pp ON pp.id = a.partner_program_id
       JOIN partners pa ON pa.id = pp.partner_id
      WHERE a.program_id = $1 AND ($2::text IS NULL OR pp.status = $2)
      ORDER BY a.created_at DESC, a.partner_program_id DESC
      LIMIT $3`,
  ),
  application: sql(
    'applications.insert',
    `INSERT INTO partner_applications (partner_program_id, program_id, email, website, message, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
  ),
};

/** Records an application: the pending partner-program record, what was sent, and partner.applied. */
export async function applyToProgram(db: Database, a: Application): Promise<ApplicationOutcome> {
  const email = a.email.toLowerCase();
  try {
    return await db.transaction(async (tx): Promise<ApplicationOutcome> => {
      const program = await tx.one<{ id: number; workspace_id: number; name: string }>(q.program, [a.programId]);
      if (!program) return { outcome: 'not_found' };
      if (await tx.one(q.taken, [program.id, email])) return { outcome: 'duplicate', programName: program.name };
      const existing = await tx.one<{ id: number }>(q.samePartner, [program.workspace_id, email]);
      const partnerId = Number(existing?.id ?? (await tx.one<{ id: number }>(q.partner, [a.name, email]))!.id);
      const junction = (await tx.one<Junction>(q.junction, [partnerId, program.id]))!;
      await tx.many(q.application, [junction.id, program.id, email, a.website ?? null, a.message ?? null, junction.created_at]);
      const row = { ...junction, id: Number(junction.id), partner_id: partnerId, program_id: Number(junction.program_id) };
      await appendEvents(tx, [
        partnerProgramChanged(row),
        partnerApplied({
          partner_program_id: row.id,
          partner_id: partnerId,
          program_id: row.program_id,
          name: a.name,
          email,
          website: a.website ?? null,
          created_at: junction.created_at,
        }),
      ]);
      return { outcome: 'applied', partnerId, partnerProgramId: row.id, programName: program.name };
    });
  } catch (error) {
    // Two applications of one email at once: the unique index keeps the first.
    if (isUniqueViolation(error, 'partner_applications_program_email')) {
      return { outcome: 'duplicate', programName: '' };
    }
    throw error;
  }
}

export interface ApplicationView {
  partner_program_id: number;
  partner_id: number;
  name: string;
  email: string;
  website: string | null;
  message: string | null;
  status: string;
  created_at: Date;
}

/** A program's applications, newest first, for the brand to decide on (what the applicant sent and its state now). */
export async function listApplications(db: Queryable, programId: number, status: string | undefined, limit: number): Promise<ApplicationView[]> {
  const rows = await db.many<ApplicationView>(q.list, [programId, status ?? null, limit]);
  return rows.map((r) => ({ ...r, partner_program_id: Number(r.partner_program_id), partner_id: Number(r.partner_id) }));
}
