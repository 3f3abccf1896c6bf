/**
 * Partner groups (issue 30; partner-program.md, "Commission rules and versions"): a program's
 * groups, each with a name and optional terms of its own that override the program's, as rule
 * versions (terms.ts). A partner belongs to at most one group of a program (partner_programs.group_id)
 * and, once moved, earns its new group's terms on the sales that follow; its earlier commissions keep
 * the versions they recorded. Every write locks the program's row first, as terms changes do, so
 * versions are numbered in order and a group is never emptied and filled at once.
 */
import { sql, type Database, type Queryable } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';
import { appendRuleVersion, latestRuleVersion, termsDiffer, type RuleVersion, type Terms } from './terms.js';

export interface GroupView {
  id: number;
  program_id: number;
  name: string;
  partner_count: number;
  /** The terms of the group's latest version; null when the group pays the program's terms. */
  terms: (Terms & { rule_version: number; effective_from: Date }) | null;
  created_at: Date;
  updated_at: Date;
}

interface GroupRow {
  id: number;
  program_id: number;
  name: string;
  partner_count: number;
  created_at: Date;
  updated_at: Date;
}

const GROUP_COLUMNS = `g.id, g.program_id, g.name, g.created_at, g.updated_at,
  (SELECT count(*) FROM partner_programs pp WHERE pp.group_id = g.id)::int AS partner_count`;

const q = {
  lockProgram: sql('groups.lock_program', `SELECT id FROM programs WHERE id = $1 FOR UPDATE`),
  insert: sql('groups.insert', `INSERT INTO partner_groups (program_id, name) VALUES ($1, $2) RETURNING id`),
  one: sql('groups.one', `SELECT ${GROUP_COLUMNS} FROM partner_groups g WHERE g.id = $2 AND g.program_id = $1 AND g.deleted_at IS NULL`),
  list: sql('groups.list', `SELECT ${GROUP_COLUMNS} FROM partner_groups g WHERE g.program_id = $1 AND g.deleted_at IS NULL ORDER BY g.id`),
  rename: sql('groups.rename', `UPDATE partner_groups SET name = $3, updated_at = now() WHERE id = $2 AND program_id = $1`),
  touch: sql('groups.touch', `UPDATE partner_groups SET updated_at = now() WHERE id = $2 AND program_id = $1`),
  remove: sql('groups.delete', `UPDATE partner_groups SET deleted_at = now(), updated_at = now() WHERE id = $2 AND program_id = $1`),
  partner: sql(
    'groups.partner',
    `SELECT pp.id, pp.partner_id, pp.group_id FROM partner_programs pp WHERE pp.program_id = $1 AND pp.partner_id = $2 FOR UPDATE`,
  ),
  setPartnerGroup: sql('groups.set_partner_group', `UPDATE partner_programs SET group_id = $2, updated_at = now() WHERE id = $1`),
};

const termsView = (v: RuleVersion | undefined): GroupView['terms'] =>
  v === undefined
    ? null
    : { commission_type: v.commission_type, commission_rate: v.commission_rate, recurring_months: v.recurring_months, rule_version: v.id, effective_from: v.effective_from };

async function withTerms(db: Queryable, row: GroupRow): Promise<GroupView> {
  const id = Number(row.id);
  const programId = Number(row.program_id);
  return { ...row, id, program_id: programId, partner_count: Number(row.partner_count), terms: termsView(await latestRuleVersion(db, programId, id)) };
}

/** One group of the program; group_not_found for an unknown, deleted or other program's id. */
export async function getGroup(db: Queryable, programId: number, groupId: number): Promise<GroupView> {
  const row = await db.one<GroupRow>(q.one, [programId, groupId]);
  if (!row) throw refused({ reason: 'group_not_found' });
  return withTerms(db, row);
}

export async function listGroups(db: Queryable, programId: number): Promise<GroupView[]> {
  const rows = await db.many<GroupRow>(q.list, [programId]);
  return Promise.all(rows.map((row) => withTerms(db, row)));
}

export interface GroupChange {
  name?: string | undefined;
  /** The group's new terms, whole (the route merges a partial change with the current terms). */
  terms?: Terms | undefined;
  effectiveFrom?: Date | undefined;
}

export async function createGroup(db: Database, programId: number, g: { name: string } & GroupChange, by: AuditContext): Promise<GroupView> {
  return db.transaction(async (tx) => {
    await tx.many(q.lockProgram, [programId]);
    const { id } = (await tx.one<{ id: number }>(q.insert, [programId, g.name]))!;
    const groupId = Number(id);
    if (g.terms) await appendRuleVersion(tx, { programId, groupId, terms: g.terms, effectiveFrom: g.effectiveFrom, by });
    const after = await getGroup(tx, programId, groupId);
    await recordAudit(tx, by, { action: 'group.created', programId, target: { type: 'group', id: groupId }, before: null, after });
    return after;
  });
}

/** Renames the group and/or appends a version of its terms; the same name and terms write nothing. */
export async function updateGroup(db: Database, programId: number, groupId: number, g: GroupChange, by: AuditContext): Promise<GroupView> {
  return db.transaction(async (tx) => {
    await tx.many(q.lockProgram, [programId]);
    const before = await getGroup(tx, programId, groupId);
    let changed = false;
    if (g.name !== undefined && g.name !== before.name) {
      await tx.many(q.rename, [programId, groupId, g.name]);
      changed = true;
    }
    if (g.terms && (before.terms === null || termsDiffer(before.terms, g.terms))) {
      await appendRuleVersion(tx, { programId, groupId, terms: g.terms, effectiveFrom: g.effectiveFrom, by });
      if (!changed) await tx.many(q.touch, [programId, groupId]);
      changed = true;
    }
    if (!changed) return before;
    const after = await getGroup(tx, programId, groupId);
    await recordAudit(tx, by, { action: 'group.updated', programId, target: { type: 'group', id: groupId }, before, after });
    return after;
  });
}

/** Deletes an empty group (group_not_empty while a partner is in it); its versions stay listed. */
export async function deleteGroup(db: Database, programId: number, groupId: number, by: AuditContext): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.many(q.lockProgram, [programId]);
    const before = await getGroup(tx, programId, groupId);
    if (before.partner_count > 0) throw refused({ reason: 'group_not_empty' });
    await tx.many(q.remove, [programId, groupId]);
    await recordAudit(tx, by, { action: 'group.deleted', programId, target: { type: 'group', id: groupId }, before, after: null });
  });
}

export interface PartnerGroup {
  partner_id: number;
  group_id: number | null;
}

/**
 * Puts the partner in the group (groupId null: out of any group), moving it from the one it was in.
 * partner_not_found for a partner not in the program (or, with `from`, not in that group),
 * group_not_found for a group not in it.
 */
export async function setPartnerGroup(
  db: Database,
  programId: number,
  partnerId: number,
  groupId: number | null,
  by: AuditContext,
  from?: number,
): Promise<PartnerGroup> {
  return db.transaction(async (tx) => {
    await tx.many(q.lockProgram, [programId]);
    if (groupId !== null) await getGroup(tx, programId, groupId);
    if (from !== undefined) await getGroup(tx, programId, from);
    const row = await tx.one<{ id: number; partner_id: number; group_id: number | null }>(q.partner, [programId, partnerId]);
    if (!row) throw refused({ reason: 'partner_not_found' });
    const current = row.group_id === null ? null : Number(row.group_id);
    if (from !== undefined && current !== from) throw refused({ reason: 'partner_not_found' });
    if (current === groupId) return { partner_id: partnerId, group_id: groupId };
    await tx.many(q.setPartnerGroup, [row.id, groupId]);
    await recordAudit(tx, by, {
      action: 'partner.group_changed',
      programId,
      target: { type: 'partner', id: partnerId },
      before: { partner_id: partnerId, group_id: current },
      after: { partner_id: partnerId, group_id: groupId },
    });
    return { partner_id: partnerId, group_id: groupId };
  });
}
