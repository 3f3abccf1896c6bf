import { sql, type Database, type Queryable } from '../../core/db.js';
import { hashSecret, newSessionToken } from './secrets.js';

export type Role = 'owner' | 'member';

const q = {
  sessionUser: sql(
    'sessions.user',
    `SELECT user_id AS "userId" FROM dashboard_sessions
      WHERE token_hash = $1 AND (expires_at IS NULL OR expires_at > now())`,
  ),
  workspaces: sql(
    'members.workspaces',
    `SELECT workspace_id AS "workspaceId", role FROM members WHERE user_id = $1 ORDER BY workspace_id`,
  ),
  workspace: sql('workspaces.insert', `INSERT INTO workspaces (name) VALUES ($1) RETURNING id`),
  user: sql(
    'users.upsert',
    `INSERT INTO users (email, name) VALUES ($1, $2)
     ON CONFLICT (email) DO UPDATE SET name = COALESCE(EXCLUDED.name, users.name) RETURNING id`,
  ),
  member: sql(
    'members.upsert',
    `INSERT INTO members (workspace_id, user_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
  ),
  session: sql(
    'sessions.insert',
    `INSERT INTO dashboard_sessions (user_id, token_hash, expires_at) VALUES ($1, $2, $3)`,
  ),
};

/** The user of a live dashboard session: one lookup by the token's hash (unique index). */
export async function sessionUserId(db: Database, token: string): Promise<number | undefined> {
  return (await db.one<{ userId: number }>(q.sessionUser, [hashSecret(token)]))?.userId;
}

export async function workspacesOf(db: Database, userId: number) {
  return db.many<{ workspaceId: number; role: Role }>(q.workspaces, [userId]);
}

export async function createWorkspace(db: Queryable, name: string): Promise<number> {
  return (await db.one<{ id: number }>(q.workspace, [name]))!.id;
}

export async function addMember(db: Queryable, workspaceId: number, email: string, role: Role, name?: string): Promise<number> {
  const userId = (await db.one<{ id: number }>(q.user, [email, name ?? null]))!.id;
  await db.many(q.member, [workspaceId, userId, role]);
  return userId;
}

/** Issues a dashboard session token; only its hash is stored. */
export async function createSession(db: Queryable, userId: number, expiresAt: Date | null = null): Promise<string> {
  const token = newSessionToken();
  await db.many(q.session, [userId, hashSecret(token), expiresAt?.toISOString() ?? null]);
  return token;
}
