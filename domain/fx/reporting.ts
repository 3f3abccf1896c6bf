import { sql, type Queryable } from '../../core/db.js';

const q = {
  reporting: sql('programs.reporting', `SELECT workspace_id AS "workspaceId", reporting_currency AS "reportingCurrency" FROM programs WHERE id = $1`),
};

/** A program's workspace and reporting currency (issue 30): what its converted totals need. */
export async function reportingOf(db: Queryable, programId: number): Promise<{ workspaceId: number; reportingCurrency: string }> {
  const row = await db.one<{ workspaceId: number | string; reportingCurrency: string }>(q.reporting, [programId]);
  if (!row) throw new Error(`program ${programId} does not exist`);
  return { workspaceId: Number(row.workspaceId), reportingCurrency: row.reportingCurrency };
}
