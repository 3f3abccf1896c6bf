import { randomBytes, randomInt } from 'node:crypto';
import { sql, type Database } from '../../core/db.js';
import { refused } from '../errors.js';
import { hashSecret } from './secrets.js';

/** Spec "Limits": a login link lives 5 minutes. */
export const LOGIN_SESSION_TTL_MS = 5 * 60_000;
/** How long a login token works (ours, docs/decisions/cli.md "CLI (issue 16)"). */
const LOGIN_TOKEN_TTL_MS = 30 * 24 * 3_600_000;
/** How often the CLI is told to poll; the 60/min CLI budget leaves room for other calls. */
export const POLL_INTERVAL_SECONDS = 2;

const newState = () => randomBytes(24).toString('base64url');
const newPollSecret = () => `lps_${randomBytes(32).toString('base64url')}`;
const newNonce = () => randomBytes(24).toString('base64url');
const newLoginToken = () => `slt_${randomBytes(32).toString('base64url')}`;

// No 0/O or 1/I: the code is read off a terminal and compared with the browser page.
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
function newUserCode(): string {
  let code = '';
  for (let i = 0; i < 8; i += 1) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

interface SessionRow {
  id: number;
  nonce: string;
  user_code: string;
  expires_at: Date;
  user_id: number | null;
  completed_at: Date | null;
  consumed_at: Date | null;
  expired: boolean;
}

const SESSION_COLUMNS = `id, nonce, user_code, expires_at, user_id, completed_at, consumed_at, expires_at <= now() AS expired`;

const q = {
  insert: sql(
    'cli_login.insert',
    `INSERT INTO cli_login_sessions (state, poll_secret_hash, nonce, user_code, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000))
     RETURNING expires_at`,
  ),
  // Spent and expired sessions are kept a day (for support), then dropped as new logins start.
  prune: sql('cli_login.prune', `DELETE FROM cli_login_sessions WHERE expires_at < now() - interval '1 day'`),
  byState: sql('cli_login.by_state', `SELECT ${SESSION_COLUMNS} FROM cli_login_sessions WHERE state = $1`),
  byStateAndSecret: sql(
    'cli_login.by_state_and_secret',
    `SELECT ${SESSION_COLUMNS} FROM cli_login_sessions WHERE state = $1 AND poll_secret_hash = $2`,
  ),
  // Completed once: the WHERE makes a second callback (or a late one) change nothing.
  complete: sql(
    'cli_login.complete',
    `UPDATE cli_login_sessions SET user_id = $2, completed_at = now()
      WHERE id = $1 AND completed_at IS NULL AND expires_at > now()
      RETURNING id`,
  ),
  // Consumed once: of two concurrent polls only one gets the row back.
  consume: sql(
    'cli_login.consume',
    `UPDATE cli_login_sessions SET consumed_at = now()
      WHERE id = $1 AND completed_at IS NOT NULL AND consumed_at IS NULL AND expires_at > now()
      RETURNING user_id AS "userId"`,
  ),
  userByEmail: sql('cli_login.user_by_email', `SELECT id, email, suspended_at AS "suspendedAt" FROM users WHERE email = $1`),
  insertUser: sql(
    'cli_login.insert_user',
    `INSERT INTO users (email, name) VALUES ($1, $2)
     ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email
     RETURNING id, email, suspended_at AS "suspendedAt"`,
  ),
  user: sql('cli_login.user', `SELECT id, email FROM users WHERE id = $1`),
  insertToken: sql(
    'cli_login_tokens.insert',
    `INSERT INTO cli_login_tokens (user_id, token_hash, expires_at)
     VALUES ($1, $2, now() + make_interval(secs => $3::double precision / 1000))
     RETURNING expires_at AS "expiresAt"`,
  ),
  // One indexed lookup; the user join tells "user not found" apart from an unknown token.
  token: sql(
    'cli_login_tokens.resolve',
    `SELECT t.user_id AS "userId", u.id IS NOT NULL AS "userExists", u.suspended_at IS NOT NULL AS suspended
       FROM cli_login_tokens t LEFT JOIN users u ON u.id = t.user_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND t.expires_at > now()`,
  ),
};

export interface StartedLogin {
  state: string;
  /** Only the CLI holds it; it never appears in the browser URL. */
  pollSecret: string;
  userCode: string;
  expiresAt: Date;
}

/** A new login session: `POST /api/v1/cli/auth/start`. */
export async function startLogin(db: Database): Promise<StartedLogin> {
  await db.many(q.prune);
  const state = newState();
  const pollSecret = newPollSecret();
  const userCode = newUserCode();
  const row = (await db.one<{ expires_at: Date }>(q.insert, [state, hashSecret(pollSecret), newNonce(), userCode, LOGIN_SESSION_TTL_MS]))!;
  return { state, pollSecret, userCode, expiresAt: row.expires_at };
}

export interface LoginPageSession {
  nonce: string;
  userCode: string;
  expiresAt: Date;
}

/** What the browser page needs to send the person to the provider; undefined unless the session awaits a sign-in. */
export async function sessionAwaitingSignIn(db: Database, state: string): Promise<LoginPageSession | undefined> {
  const row = await db.one<SessionRow>(q.byState, [state]);
  if (!row || row.completed_at || row.expired) return undefined;
  return { nonce: row.nonce, userCode: row.user_code, expiresAt: row.expires_at };
}

/** The claims of a verified id_token that identify the person. */
export interface VerifiedIdentity {
  email: string;
  name: string | undefined;
}

/**
 * `POST /auth/callback`: checks the session, has `verify` check the id_token against the
 * session's nonce (outside any transaction: it may fetch the provider's keys), then binds the
 * session to the account. A first login creates the user (with no workspace yet).
 */
export async function completeLogin(db: Database, state: string, verify: (nonce: string) => Promise<VerifiedIdentity>): Promise<void> {
  const session = await db.one<SessionRow>(q.byState, [state]);
  if (!session || session.completed_at) throw refused({ reason: 'login_session_not_found' });
  if (session.expired) throw refused({ reason: 'login_session_expired' });
  const identity = await verify(session.nonce);
  const user =
    (await db.one<{ id: number; suspendedAt: Date | null }>(q.userByEmail, [identity.email])) ??
    (await db.one<{ id: number; suspendedAt: Date | null }>(q.insertUser, [identity.email, identity.name ?? null]))!;
  if (user.suspendedAt) throw refused({ reason: 'account_suspended' });
  const completed = await db.one(q.complete, [session.id, user.id]);
  if (completed) return;
  // Lost a race with another callback, or the link expired while the token was checked.
  const now = await db.one<SessionRow>(q.byState, [state]);
  throw refused({ reason: now?.expired && !now.completed_at ? 'login_session_expired' : 'login_session_not_found' });
}

export type PollResult =
  | { status: 'pending'; expiresAt: Date }
  | { status: 'expired' }
  | { status: 'complete'; token: string; expiresAt: Date; user: { id: number; email: string } };

/**
 * `GET /auth/poll`: only with the poll secret of the CLI that started the session (anything else
 * is "not found", so a leaked state reveals nothing). The first poll after sign-in mints the
 * login token (stored as its hash) and hands it out; later polls are refused.
 */
export async function pollLogin(db: Database, state: string, pollSecret: string | undefined): Promise<PollResult> {
  if (!pollSecret) throw refused({ reason: 'login_session_not_found' });
  const session = await db.one<SessionRow>(q.byStateAndSecret, [state, hashSecret(pollSecret)]);
  if (!session) throw refused({ reason: 'login_session_not_found' });
  if (session.consumed_at) throw refused({ reason: 'login_session_consumed' });
  if (session.expired) return { status: 'expired' };
  if (!session.completed_at) return { status: 'pending', expiresAt: session.expires_at };
  return db.transaction(async (tx) => {
    const consumed = await tx.one<{ userId: number }>(q.consume, [session.id]);
    if (!consumed) throw refused({ reason: 'login_session_consumed' });
    const token = newLoginToken();
    const { expiresAt } = (await tx.one<{ expiresAt: Date }>(q.insertToken, [consumed.userId, hashSecret(token), LOGIN_TOKEN_TTL_MS]))!;
    const user = (await tx.one<{ id: number; email: string }>(q.user, [consumed.userId]))!;
    return { status: 'complete' as const, token, expiresAt, user: { id: Number(user.id), email: user.email } };
  });
}

export type LoginTokenLookup = { outcome: 'valid'; userId: number } | { outcome: 'invalid' } | { outcome: 'unknown-user' };

/** An account login token, by its hash: valid, unknown/expired/revoked, or its user is gone. A suspended user's tokens stop working. */
export async function resolveLoginToken(db: Database, token: string): Promise<LoginTokenLookup> {
  const row = await db.one<{ userId: number; userExists: boolean; suspended: boolean }>(q.token, [hashSecret(token)]);
  if (!row || row.suspended) return { outcome: 'invalid' };
  if (!row.userExists) return { outcome: 'unknown-user' };
  return { outcome: 'valid', userId: Number(row.userId) };
}
