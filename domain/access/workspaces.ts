import { sql, type Database, type Queryable } from '../../core/db.js';
import { hashSecret, newSessionToken } from './secrets.js';

export type Role = 'owner' | 'member';

/**
 * A dashboard session lasts this long after its last use (ours, docs/decisions/access.md "Keys and
 * sessions"): the same 30 days as a CLI login token, renewed on use so a session in use stays.
 */
export const SESSION_IDLE_LIFETIME_MS = 30 * 24 * 3_600_000;
/** The expiry is pushed forward at most this often, so reads rarely write. */
const SESSION_RENEW_EVERY_MS = 3_600_000;

const q = {
  // One indexed lookup; a live session that has not been renewed for an hour is renewed with it.
  // A suspended user's sessions match nothing (and are not renewed) until the user is reinstated.
  sessionUser: sql(
    'sessions.user',
    `WITH live AS (
       SELECT s.id, s.user_id, s.expires_at
         FROM dashboard_sessions s JOIN users u ON u.id = s.user_id AND u.suspended_at IS NULL
        WHERE s.token_hash = $1 AND s.expires_at > now()
     ), renewed AS (
       UPDATE dashboard_sessions s SET expires_at = now() + make_interval(secs => $2::double precision / 1000)
         FROM live
        WHERE s.id = live.id AND live.expires_at < now() + make_interval(secs => ($2::double precision - $3) / 1000)
     )
     SELECT user_id AS "userId" FROM live`,
  ),
  revokeSession: sql('sessions.revoke', `DELETE FROM dashboard_sessions WHERE token_hash = $1 RETURNING id`),
  revokeUserSessions: sql(
    'sessions.revoke_user',
    `WITH person AS (SELECT id FROM users WHERE lower(email) = lower($1)),
     sessions AS (DELETE FROM dashboard_sessions WHERE user_id IN (SELECT id FROM person) RETURNING id),
     tokens AS (
       UPDATE cli_login_tokens SET revoked_at = now()
        WHERE user_id IN (SELECT id FROM person) AND revoked_at IS NULL RETURNING id
     )
     SELECT (SELECT count(*) FROM person) AS users, (SELECT count(*) FROM sessions) AS sessions,
            (SELECT count(*) FROM tokens) AS "loginTokens"`,
  ),
  // Suspension keeps the first time it began; every credential of the person checks it at use.
  suspendUser: sql(
    'users.suspend',
    `UPDATE users SET suspended_at = COALESCE(suspended_at, now()) WHERE lower(email) = lower($1) RETURNING suspended_at AS "suspendedAt"`,
  ),
  reinstateUser: sql('users.reinstate', `UPDATE users SET suspended_at = NULL WHERE lower(email) = lower($1) RETURNING id`),
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
    `INSERT INTO dashboard_sessions (user_id, token_hash, expires_at)
     VALUES ($1, $2, COALESCE($3::timestamptz, now() + make_interval(secs => $4::double precision / 1000)))`,
  ),
};

/** The user of a live dashboard session: one lookup by the token's hash (unique index); none for a suspended user. */
export async function sessionUserId(db: Database, token: string): Promise<number | undefined> {
  return (await db.one<{ userId: number }>(q.sessionUser, [hashSecret(token), SESSION_IDLE_LIFETIME_MS, SESSION_RENEW_EVERY_MS]))?.userId;
}

/** Sign-out: the session stops working at once, on every process. False when it was not live. */
export async function revokeSession(db: Database, token: string): Promise<boolean> {
  return (await db.many(q.revokeSession, [hashSecret(token)])).length > 0;
}

/** The operator's revocation of a person: every dashboard session and CLI login token of the email. */
export async function revokeUserSessions(db: Database, email: string): Promise<{ users: number; sessions: number; loginTokens: number }> {
  return (await db.one<{ users: number; sessions: number; loginTokens: number }>(q.revokeUserSessions, [email]))!;
}

/**
 * The operator's suspension of a person: from the next lookup on, their dashboard sessions and CLI
 * login tokens are refused and the CLI login answers ACCOUNT_BLOCKED. Nothing is deleted, so
 * reinstating gives the same credentials back. Undefined when no user has the email.
 */
export async function suspendUser(db: Database, email: string): Promise<Date | undefined> {
  return (await db.many<{ suspendedAt: Date }>(q.suspendUser, [email]))[0]?.suspendedAt;
}

/** Ends a suspension; false when no user has the email. */
export async function reinstateUser(db: Database, email: string): Promise<boolean> {
  return (await db.many(q.reinstateUser, [email])).length > 0;
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

/** Issues a dashboard session token (only its hash is stored), live for the idle lifetime unless expiresAt says otherwise. */
export async function createSession(db: Queryable, userId: number, expiresAt?: Date): Promise<string> {
  const token = newSessionToken();
  await db.many(q.session, [userId, hashSecret(token), expiresAt?.toISOString() ?? null, SESSION_IDLE_LIFETIME_MS]);
  return token;
}
