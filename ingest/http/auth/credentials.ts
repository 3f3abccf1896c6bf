import type { Database } from '../../../core/db.js';
import type { CredentialKind, Principal } from '../../../domain/access/access.js';
import { findAgentKey } from '../../../domain/access/agent-keys.js';
import { findProgramKey, type ProgramKey } from '../../../domain/programs/api-keys.js';
import { resolveLoginToken } from '../../../domain/access/cli-login.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { sessionUserId } from '../../../domain/access/workspaces.js';
import { parseBearer, parseSessionHeader, type PresentedCredential } from './bearer.js';

type PrincipalOf<K extends CredentialKind> = Extract<Principal, { kind: K }>;

/** How one kind of credential is read from the Authorization header and looked up (by hash only). */
export interface Credential<K extends CredentialKind> {
  read(header: string | undefined): PresentedCredential;
  /** Undefined when the token matches nothing usable. One indexed lookup. */
  resolve(db: Database, token: string): Promise<PrincipalOf<K> | undefined>;
  /** Only after resolve found nothing: why, when the credential tells more than "invalid". */
  whyRefused?(db: Database, token: string): Promise<'invalid' | 'unknownUser'>;
}

/**
 * Every credential of the spec. Null marks one not built yet: a route family naming it fails at
 * start-up. Adding account login tokens (issue 16) or agent keys (issue 13) is filling in its entry.
 */
export const CREDENTIALS: { [K in CredentialKind]: Credential<K> | null } = {
  programKey: {
    read: parseBearer,
    async resolve(db, token) {
      const key = await findProgramKey(db, token);
      return key && programKeyPrincipal(key, token);
    },
  },
  session: {
    read: parseSessionHeader,
    async resolve(db, token) {
      const userId = await sessionUserId(db, token);
      return userId === undefined ? undefined : { kind: 'session', userId };
    },
  },
  account: {
    read: parseBearer,
    async resolve(db, token) {
      const found = await resolveLoginToken(db, token);
      return found.outcome === 'valid' ? { kind: 'account', userId: found.userId } : undefined;
    },
    async whyRefused(db, token) {
      return (await resolveLoginToken(db, token)).outcome === 'unknown-user' ? 'unknownUser' : 'invalid';
    },
  },
  agentKey: {
    read: parseBearer,
    async resolve(db, token) {
      const key = await findAgentKey(db, token);
      return key && { kind: 'agentKey', keyId: String(key.id), workspaceId: key.workspaceId, scopes: key.scopes };
    },
  },
};

/** The caller a program key found by its hash stands for (the tracking routes find keys in batches). */
export function programKeyPrincipal(key: ProgramKey, token: string): PrincipalOf<'programKey'> {
  const rotation = key.rotationMarkedAt && key.rotationDeadline ? { markedAt: key.rotationMarkedAt, deadline: key.rotationDeadline } : null;
  return { kind: 'programKey', programId: key.programId, workspaceId: key.workspaceId, keyId: hashSecret(token), rotation };
}

export function credentialOf<K extends CredentialKind>(kind: K): Credential<K> {
  const credential = CREDENTIALS[kind] as Credential<K> | null;
  if (!credential) throw new Error(`no route can require ${kind} credentials yet: they are not resolved`);
  return credential;
}
