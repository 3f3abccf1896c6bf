import { createHash, randomBytes } from 'node:crypto';
import { sql, type Database } from '../../core/db.js';
import { refused } from '../errors.js';
import type { VerifiedIdentity } from './cli-login.js';
import { createSession, SESSION_IDLE_LIFETIME_MS } from './workspaces.js';

/** A console sign-in must come back from the provider within this time (ours: a provider's page can take a while). */
export const CONSOLE_SIGN_IN_TTL_MS = 10 * 60_000;

const newState = () => randomBytes(24).toString('base64url');
const newNonce = () => randomBytes(24).toString('base64url');
/** RFC 7636: the S256 challenge of a verifier. */
export const pkceChallenge = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

const q = {
  // Spent and expired sign-ins are kept a day (for support), then dropped as new ones start.
  prune: sql('console_sign_in.prune', `DELETE FROM console_sign_ins WHERE expires_at < now() - interval '1 day'`),
  insert: sql(
    'console_sign_in.insert',
    `INSERT INTO console_sign_ins (state, nonce, code_challenge, redirect_uri, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000))
     RETURNING expires_at AS "expiresAt"`,
  ),
  byState: sql(
    'console_sign_in.by_state',
    `SELECT id, nonce, code_challenge AS "codeChallenge", redirect_uri AS "redirectUri", used_at IS NOT NULL AS used,
            expires_at <= now() AS expired
       FROM console_sign_ins WHERE state = $1`,
  ),
  // Spent once: of two concurrent completions only one gets the row back.
  spend: sql(
    'console_sign_in.spend',
    `UPDATE console_sign_ins SET used_at = now() WHERE id = $1 AND used_at IS NULL AND expires_at > now() RETURNING id`,
  ),
  // Who may sign in: a person with a membership, or with an invite still open (who then accepts it).
  person: sql(
    'console_sign_in.person',
    `SELECT u.id, u.email, u.name, u.suspended_at IS NOT NULL AS suspended,
            EXISTS (SELECT 1 FROM members m WHERE m.user_id = u.id) AS member
       FROM users u WHERE lower(u.email) = $1 ORDER BY u.id LIMIT 1`,
  ),
  openInvite: sql(
    'console_sign_in.open_invite',
    `SELECT 1 AS found FROM workspace_invites
      WHERE email = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now() LIMIT 1`,
  ),
  insertUser: sql(
    'console_sign_in.insert_user',
    `INSERT INTO users (email, name) VALUES ($1, $2)
     ON CONFLICT (email) DO UPDATE SET name = COALESCE(users.name, EXCLUDED.name) RETURNING id`,
  ),
};

export interface StartedSignIn {
  state: string;
  nonce: string;
  expiresAt: Date;
}

/** A new sign-in: the browser holds the PKCE verifier of `codeChallenge`; we keep state, nonce and where the provider returns. */
export async function startConsoleSignIn(db: Database, codeChallenge: string, redirectUri: string): Promise<StartedSignIn> {
  await db.many(q.prune);
  const state = newState();
  const nonce = newNonce();
  const { expiresAt } = (await db.one<{ expiresAt: Date }>(q.insert, [state, nonce, codeChallenge, redirectUri, CONSOLE_SIGN_IN_TTL_MS]))!;
  return { state, nonce, expiresAt };
}

/** What a person may sign in as: known to a workspace (a member) or invited into one. */
export interface SignInAccount {
  email: string;
  name: string | undefined;
}

/**
 * The account of an email for the embedded provider's sign-in page: a workspace member or a
 * person with an open invite; undefined for anyone else (the page says so).
 */
export async function signInAccount(db: Database, email: string): Promise<SignInAccount | undefined> {
  const wanted = email.trim().toLowerCase();
  const person = await db.one<{ email: string; name: string | null; member: boolean }>(q.person, [wanted]);
  if (person?.member) return { email: person.email.toLowerCase(), name: person.name ?? undefined };
  if (await db.one(q.openInvite, [wanted])) return { email: wanted, name: person?.name ?? undefined };
  return undefined;
}

export interface ConsoleSession {
  token: string;
  expiresAt: Date;
  user: { id: number; email: string; name: string | null };
}

/** The provider's answer to the code, checked: `redeem` trades the code (with the verifier) and verifies the id_token against the nonce. */
export type RedeemCode = (signIn: { nonce: string; redirectUri: string }) => Promise<VerifiedIdentity>;

/**
 * `POST /api/tracking/session`: the sign-in of `state`, from the browser that holds its verifier,
 * is spent (once), the code redeemed and its id_token verified (outside any transaction: it calls
 * the provider), then a dashboard session is made for the person: a member, or someone with an open
 * invite (the console accepts it next). A suspended person is refused.
 */
export async function completeConsoleSignIn(db: Database, state: string, codeVerifier: string, redeem: RedeemCode): Promise<ConsoleSession> {
  const signIn = await db.one<{ id: number; nonce: string; codeChallenge: string; redirectUri: string; used: boolean; expired: boolean }>(q.byState, [state]);
  if (!signIn || signIn.used) throw refused({ reason: 'login_session_not_found' });
  if (signIn.expired) throw refused({ reason: 'login_session_expired' });
  if (pkceChallenge(codeVerifier) !== signIn.codeChallenge) throw refused({ reason: 'sign_in_verifier_mismatch' });
  if (!(await db.one(q.spend, [signIn.id]))) throw refused({ reason: 'login_session_not_found' });
  const identity = await redeem({ nonce: signIn.nonce, redirectUri: signIn.redirectUri });
  const email = identity.email.toLowerCase();
  const person = await db.one<{ id: number; email: string; name: string | null; suspended: boolean; member: boolean }>(q.person, [email]);
  if (person?.suspended) throw refused({ reason: 'account_suspended' });
  let userId = person?.id;
  if (!person?.member) {
    if (!(await db.one(q.openInvite, [email]))) throw refused({ reason: 'no_workspace' });
    userId ??= (await db.one<{ id: number }>(q.insertUser, [email, identity.name ?? null]))!.id;
  }
  const expiresAt = new Date(Date.now() + SESSION_IDLE_LIFETIME_MS);
  const token = await createSession(db, Number(userId), expiresAt);
  return { token, expiresAt, user: { id: Number(userId), email: person?.email ?? email, name: person?.name ?? identity.name ?? null } };
}
