/**
 * Commission rule versions (issue 30; partner-program.md, "Commission rules and versions"): every
 * change of a program's or a partner group's terms appends a version with its effective_from;
 * record_sale (schemas/postgres/functions/record_sale.sql) computes each commission with the
 * version in effect at the sale's time and records its id on the commission and its ledger entry.
 * A version is never changed: a new one replaces it from its effective_from on.
 * docs/decisions/commission-terms.md.
 */
import { sql, type Queryable } from '../../core/db.js';
import type { AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';
import type { CommissionType } from '../tracking/commissions.js';

/** The terms a version holds: recurring_months null is lifetime (and means nothing to the one-off types). */
export interface Terms {
  commission_type: CommissionType;
  commission_rate: number;
  recurring_months: number | null;
}

export const RECURRING_TYPES: readonly CommissionType[] = ['recurring_percent', 'recurring_fixed'];

export interface RuleVersion extends Terms {
  id: number;
  version: number;
  program_id: number;
  group_id: number | null;
  group_name: string | null;
  effective_from: Date;
  changed_by: { type: string; id: string; label: string | null };
  created_at: Date;
}

const VERSION_COLUMNS = `v.id, v.version, v.program_id, v.group_id, g.name AS group_name, v.effective_from, v.commission_type,
  v.commission_rate::float8 AS commission_rate, v.recurring_months, v.created_at,
  json_build_object('type', v.changed_by_type, 'id', v.changed_by_id,
                    'label', CASE WHEN v.changed_by_type = 'user' THEN (SELECT email FROM users u WHERE u.id::text = v.changed_by_id)
                                  WHEN v.changed_by_type = 'agent' THEN (SELECT name FROM agent_keys a WHERE a.id::text = v.changed_by_id) END)
    AS changed_by`;

const q = {
  // The scope's latest effective_from and the database's now, read under the caller's lock of the program.
  bounds: sql(
    'rule_versions.bounds',
    `SELECT now() AS now, (SELECT max(effective_from) FROM commission_rule_versions
                            WHERE program_id = $1 AND group_id IS NOT DISTINCT FROM $2::bigint) AS latest`,
  ),
  insert: sql(
    'rule_versions.insert',
    `INSERT INTO commission_rule_versions (program_id, group_id, version, effective_from, commission_type, commission_rate,
                                          recurring_months, changed_by_type, changed_by_id)
     SELECT $1, $2::bigint, COALESCE((SELECT max(version) FROM commission_rule_versions WHERE program_id = $1), 0) + 1,
            COALESCE($3::timestamptz, now()), $4, $5, $6, $7, $8
     RETURNING id`,
  ),
  one: sql('rule_versions.one', `SELECT ${VERSION_COLUMNS} FROM commission_rule_versions v LEFT JOIN partner_groups g ON g.id = v.group_id WHERE v.id = $1`),
  list: sql(
    'rule_versions.list',
    `SELECT ${VERSION_COLUMNS} FROM commission_rule_versions v LEFT JOIN partner_groups g ON g.id = v.group_id
      WHERE v.program_id = $1 AND ($2::bigint IS NULL OR v.group_id = $2::bigint)
      ORDER BY v.version`,
  ),
  // The terms of a scope's latest version (what a group's read shows as its terms).
  latest: sql(
    'rule_versions.latest',
    `SELECT ${VERSION_COLUMNS} FROM commission_rule_versions v LEFT JOIN partner_groups g ON g.id = v.group_id
      WHERE v.program_id = $1 AND v.group_id IS NOT DISTINCT FROM $2::bigint
      ORDER BY v.effective_from DESC LIMIT 1`,
  ),
};

const versionView = (row: RuleVersion): RuleVersion => ({
  ...row,
  id: Number(row.id),
  program_id: Number(row.program_id),
  group_id: row.group_id === null ? null : Number(row.group_id),
  commission_rate: Number(row.commission_rate),
});

/** Whether two sets of terms differ (a rate as stored, to 4 decimals). */
export function termsDiffer(a: Terms, b: Terms): boolean {
  return a.commission_type !== b.commission_type || Number(a.commission_rate) !== Number(b.commission_rate) || (a.recurring_months ?? null) !== (b.recurring_months ?? null);
}

/**
 * Appends a version of the program's terms (groupId null) or of a group's, inside the caller's
 * transaction, which holds the program's row locked (versions of one program are numbered in order).
 * effectiveFrom: now when undefined; refused when in the past (rule_version_in_past) or not after
 * the scope's latest version (rule_version_overlaps): either would change what existing commissions
 * were computed with.
 */
export async function appendRuleVersion(
  tx: Queryable,
  v: { programId: number; groupId: number | null; terms: Terms; effectiveFrom: Date | undefined; by: AuditContext },
): Promise<RuleVersion> {
  const { now, latest } = (await tx.one<{ now: Date; latest: Date | null }>(q.bounds, [v.programId, v.groupId]))!;
  const from = v.effectiveFrom ?? now;
  if (v.effectiveFrom !== undefined && v.effectiveFrom.getTime() < now.getTime()) throw refused({ reason: 'rule_version_in_past' });
  if (latest !== null && from.getTime() <= latest.getTime()) throw refused({ reason: 'rule_version_overlaps', latest: latest.toISOString() });
  const { id } = (await tx.one<{ id: number }>(q.insert, [
    v.programId,
    v.groupId,
    v.effectiveFrom ?? null,
    v.terms.commission_type,
    v.terms.commission_rate,
    v.terms.recurring_months,
    v.by.actor.type,
    String(v.by.actor.id),
  ]))!;
  return versionView((await tx.one<RuleVersion>(q.one, [id]))!);
}

/** The program's versions and its groups' (or one group's), oldest first. */
export async function listRuleVersions(db: Queryable, programId: number, groupId?: number): Promise<RuleVersion[]> {
  return (await db.many<RuleVersion>(q.list, [programId, groupId ?? null])).map(versionView);
}

/** A scope's latest version, or undefined when it has none (a group without terms of its own). */
export async function latestRuleVersion(db: Queryable, programId: number, groupId: number | null): Promise<RuleVersion | undefined> {
  const row = await db.one<RuleVersion>(q.latest, [programId, groupId]);
  return row ? versionView(row) : undefined;
}
