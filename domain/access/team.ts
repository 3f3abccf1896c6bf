import { randomBytes } from 'node:crypto';
import { sql, type Database, type Transaction } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { refused } from '../errors.js';
import { hashSecret } from './secrets.js';
import type { Role } from './workspaces.js';

/** An invite link works this long (ours: long enough for a colleague's week, short enough to leak little). */
export const INVITE_TTL_MS = 7 * 24 * 3_600_000;

const newInviteToken = () => `inv_${randomBytes(24).toString('base64url')}`;

export interface TeamMember {
  user_id: number;
  email: string;
  name: string | null;
  role: Role;
  joined_at: Date;
  suspended: boolean;
}

export interface OpenInvite {
  id: number;
  email: string;
  role: Role;
  invited_by: string | null;
  created_at: Date;
  expires_at: Date;
}

const q = {
  workspaces: sql(
    'team.workspaces_of_user',
    `SELECT w.id, w.name, m.role FROM members m JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = $1 ORDER BY w.id`,
  ),
  members: sql(
    'team.members',
    `SELECT u.id AS user_id, u.email, u.name, m.role, m.created_at AS joined_at, u.suspended_at IS NOT NULL AS suspended
       FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY m.created_at, u.id`,
  ),
  invites: sql(
    'team.open_invites',
    `SELECT i.id, i.email, i.role, u.email AS invited_by, i.created_at, i.expires_at
       FROM workspace_invites i LEFT JOIN users u ON u.id = i.invited_by
      WHERE i.workspace_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
      ORDER BY i.created_at DESC, i.id DESC`,
  ),
  // Every write to a workspace's team takes this lock first: two owners demoting each other at once
  // are serialized, so the last owner is always seen as the last.
  lock: sql('team.lock_workspace', `SELECT id FROM workspaces WHERE id = $1 FOR UPDATE`),
  memberByEmail: sql(
    'team.member_by_email',
    `SELECT 1 AS found FROM members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND lower(u.email) = $2`,
  ),
  // A new invite of the same email replaces the open one: only the newest link works.
  revokeOpenFor: sql(
    'team.revoke_open_for_email',
    `UPDATE workspace_invites SET revoked_at = now()
      WHERE workspace_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL`,
  ),
  insertInvite: sql(
    'team.insert_invite',
    `INSERT INTO workspace_invites (workspace_id, email, role, token_hash, invited_by, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::double precision / 1000))
     RETURNING id, created_at, expires_at`,
  ),
  revokeInvite: sql(
    'team.revoke_invite',
    `UPDATE workspace_invites SET revoked_at = now()
      WHERE id = $2 AND workspace_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL RETURNING id, email, role, expires_at`,
  ),
  inviteByToken: sql(
    'team.invite_by_token',
    `SELECT id, workspace_id, email, role FROM workspace_invites
      WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
      FOR UPDATE`,
  ),
  user: sql('team.user', `SELECT lower(email) AS email FROM users WHERE id = $1`),
  accept: sql('team.accept_invite', `UPDATE workspace_invites SET accepted_at = now(), accepted_by = $2 WHERE id = $1`),
  // An existing member keeps their role: an invite adds people, it never demotes or promotes them.
  join: sql(
    'team.join',
    `INSERT INTO members (workspace_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, user_id) DO NOTHING`,
  ),
  role: sql('team.role', `SELECT role FROM members WHERE workspace_id = $1 AND user_id = $2`),
  owners: sql('team.owner_count', `SELECT count(*)::int AS owners FROM members WHERE workspace_id = $1 AND role = 'owner'`),
  setRole: sql('team.set_role', `UPDATE members SET role = $3 WHERE workspace_id = $1 AND user_id = $2`),
  remove: sql('team.remove', `DELETE FROM members WHERE workspace_id = $1 AND user_id = $2`),
};

/** The workspaces a person belongs to, with their role in each. */
export const workspacesOfUser = (db: Database, userId: number) => db.many<{ id: number; name: string; role: Role }>(q.workspaces, [userId]);

/** A workspace's members and its open invites (never the invite links: only their hashes are kept). */
export async function teamOf(db: Database, workspaceId: number): Promise<{ members: TeamMember[]; invites: OpenInvite[] }> {
  const [members, invites] = await Promise.all([db.many<TeamMember>(q.members, [workspaceId]), db.many<OpenInvite>(q.invites, [workspaceId])]);
  return { members, invites };
}

export interface IssuedInvite {
  id: number;
  /** The link's secret: handed out once, stored as its hash. */
  token: string;
  email: string;
  role: Role;
  createdAt: Date;
  expiresAt: Date;
}

/** An owner invites an email with a role; an earlier open invite of the same email stops working. */
export async function inviteMember(db: Database, i: { workspaceId: number; email: string; role: Role; invitedBy: number }, by: AuditContext): Promise<IssuedInvite> {
  const email = i.email.trim().toLowerCase();
  return db.transaction(async (tx) => {
    await tx.many(q.lock, [i.workspaceId]);
    if (await tx.one(q.memberByEmail, [i.workspaceId, email])) throw refused({ reason: 'already_member' });
    await tx.many(q.revokeOpenFor, [i.workspaceId, email]);
    const token = newInviteToken();
    const row = (await tx.one<{ id: number; created_at: Date; expires_at: Date }>(q.insertInvite, [
      i.workspaceId, email, i.role, hashSecret(token), i.invitedBy, INVITE_TTL_MS,
    ]))!;
    // The invite without its link (the token is the link's secret).
    const after = { email, role: i.role, expires_at: row.expires_at };
    await recordAudit(tx, by, { action: 'team.invite_created', programId: null, workspaceId: i.workspaceId, target: { type: 'invite', id: Number(row.id) }, before: null, after });
    return { id: Number(row.id), token, email, role: i.role, createdAt: row.created_at, expiresAt: row.expires_at };
  });
}

export async function revokeInvite(db: Database, workspaceId: number, inviteId: number, by: AuditContext): Promise<void> {
  await db.transaction(async (tx) => {
    const revoked = await tx.one<{ email: string; role: Role; expires_at: Date }>(q.revokeInvite, [workspaceId, inviteId]);
    if (!revoked) throw refused({ reason: 'invite_not_found' });
    const before = { email: revoked.email, role: revoked.role, expires_at: revoked.expires_at };
    await recordAudit(tx, by, { action: 'team.invite_revoked', programId: null, workspaceId, target: { type: 'invite', id: inviteId }, before, after: null });
  });
}

/**
 * The signed-in person accepts an invite link: only once, before it expires, unless revoked, and
 * only with the email it was sent to. A member already keeps their role.
 */
export async function acceptInvite(db: Database, userId: number, token: string, by: AuditContext): Promise<{ workspaceId: number; role: Role }> {
  return db.transaction(async (tx) => {
    const invite = await tx.one<{ id: number; workspace_id: number; email: string; role: Role }>(q.inviteByToken, [hashSecret(token)]);
    if (!invite) throw refused({ reason: 'invite_not_found' });
    const user = await tx.one<{ email: string }>(q.user, [userId]);
    if (user?.email !== invite.email) throw refused({ reason: 'invite_email_mismatch' });
    await tx.many(q.lock, [invite.workspace_id]);
    const was = await tx.one<{ role: Role }>(q.role, [invite.workspace_id, userId]);
    await tx.many(q.join, [invite.workspace_id, userId, invite.role]);
    await tx.many(q.accept, [invite.id, userId]);
    const role = (await tx.one<{ role: Role }>(q.role, [invite.workspace_id, userId]))!.role;
    await recordAudit(tx, by, {
      action: 'team.invite_accepted',
      programId: null,
      workspaceId: Number(invite.workspace_id),
      target: { type: 'member', id: userId },
      before: was ? { user_id: userId, email: invite.email, role: was.role } : null,
      after: { user_id: userId, email: invite.email, role, invite_id: Number(invite.id) },
    });
    return { workspaceId: Number(invite.workspace_id), role };
  });
}

/** The member's role, after the workspace's lock; refuses when they are not a member. */
async function lockedRole(tx: Transaction, workspaceId: number, userId: number): Promise<Role> {
  await tx.many(q.lock, [workspaceId]);
  const row = await tx.one<{ role: Role }>(q.role, [workspaceId, userId]);
  if (!row) throw refused({ reason: 'member_not_found' });
  return row.role;
}

/** A workspace always keeps an owner: the last one can be neither demoted nor removed. */
async function keepAnOwner(tx: Transaction, workspaceId: number, current: Role) {
  if (current !== 'owner') return;
  const { owners } = (await tx.one<{ owners: number }>(q.owners, [workspaceId]))!;
  if (owners <= 1) throw refused({ reason: 'last_owner' });
}

export async function changeRole(db: Database, workspaceId: number, userId: number, role: Role, by: AuditContext): Promise<void> {
  await db.transaction(async (tx) => {
    const current = await lockedRole(tx, workspaceId, userId);
    if (current === role) return;
    await keepAnOwner(tx, workspaceId, current);
    await tx.many(q.setRole, [workspaceId, userId, role]);
    const target = { type: 'member', id: userId };
    await recordAudit(tx, by, { action: 'team.role_changed', programId: null, workspaceId, target, before: { user_id: userId, role: current }, after: { user_id: userId, role } });
  });
}

/** Removes a member: from the next request on, nothing of the workspace is theirs to see or change. */
export async function removeMember(db: Database, workspaceId: number, userId: number, by: AuditContext): Promise<void> {
  await db.transaction(async (tx) => {
    const current = await lockedRole(tx, workspaceId, userId);
    await keepAnOwner(tx, workspaceId, current);
    await tx.many(q.remove, [workspaceId, userId]);
    await recordAudit(tx, by, { action: 'team.member_removed', programId: null, workspaceId, target: { type: 'member', id: userId }, before: { user_id: userId, role: current }, after: null });
  });
}
