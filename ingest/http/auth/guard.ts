import type { FastifyRequest } from 'fastify';
import type { Database } from '../../../core/db.js';
import { authorizeProgram, authorizeWorkspace, type AuthorizedProgram, type Permission, type Principal } from '../../../domain/access/access.js';
import { credentialOf } from './credentials.js';
import type { FailedAuthThrottle } from './failed-auth.js';
import { programKeyHook } from './program-key.js';
import { refusal } from './refusal.js';
import { REQUIREMENTS, type AccessAnswers, type Answer, type CredentialAnswers, type Family, type GuardedFamily, type ProgramKeyFamily } from './requirements.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling; set by the family's credential hook, absent on anonymous calls. */
    principal?: Principal;
    /** The program of the :programId path once the permission check allowed it. */
    authorizedProgram?: AuthorizedProgram;
  }
}

export interface AuthDeps {
  db: Database;
  /** Needed by program-key families (the rotation docs link). */
  docsBaseUrl?: string;
  /** Failed lookups counted per client address; past the limit, 429 before any lookup. */
  throttle: FailedAuthThrottle;
}

const isProgramKeyFamily = (family: Family): family is ProgramKeyFamily => REQUIREMENTS[family].credential === 'programKey';

/**
 * What routes use to declare their needs: `...auth.require('status', 'tracking:read')` adds the
 * credential hook (onRequest, before validation) and the permission check on :programId
 * (preHandler, after validation), both answering from the requirement table.
 */
export function createAuth({ db, docsBaseUrl, throttle }: AuthDeps) {
  /** onRequest: the family's credential into request.principal, or the family's refusal. */
  function authenticate(family: Family) {
    if (isProgramKeyFamily(family)) {
      if (docsBaseUrl === undefined) throw new Error(`${family}: program keys need docsBaseUrl`);
      return programKeyHook(db, { surface: family, docsBaseUrl, throttle });
    }
    const { credential: kind, anonymous, refuse } = REQUIREMENTS[family];
    const credential = credentialOf(kind);
    return async function authenticateCredential(request: FastifyRequest) {
      const presented = credential.read(request.headers.authorization);
      if (presented.kind !== 'token') {
        if (anonymous && presented.kind !== 'malformed') return;
        throw refusal(presented.kind === 'empty' ? refuse.missing : refuse.malformed);
      }
      const throttled = throttle.check(request);
      if (throttled) throw throttled;
      const principal = await credential.resolve(db, presented.token);
      if (!principal) {
        const tooMany = await throttle.failed(request);
        if (tooMany) throw tooMany;
        const why = (await credential.whyRefused?.(db, presented.token)) ?? 'invalid';
        const refuseUnknown: CredentialAnswers = refuse;
        throw refusal(why === 'unknownUser' && refuseUnknown.unknownUser ? refuseUnknown.unknownUser : refuse.invalid);
      }
      request.principal = principal;
    };
  }

  const accessAnswers = (family: GuardedFamily): AccessAnswers => REQUIREMENTS[family].refuse;

  /** The permission check on the request's program; throws the family's refusal. */
  async function checkProgram(request: FastifyRequest, family: GuardedFamily, permission: Permission, programId: number): Promise<AuthorizedProgram> {
    const answers = accessAnswers(family);
    const result = await authorizeProgram(db, request.principal!, permission, programId);
    switch (result.outcome) {
      case 'allowed':
        return result.program;
      case 'unknown-program':
        throw refusal(answers.unknownProgram);
      case 'not-member':
        throw refusal(answers.notMember);
      case 'missing-permission':
        throw refusal(answers.missingPermission(permission));
    }
  }

  /** The permission check on a workspace (creating a program there); throws the family's refusal. */
  async function checkWorkspace(request: FastifyRequest, family: GuardedFamily, permission: Permission, workspaceId: number): Promise<void> {
    const answers = accessAnswers(family);
    const result = await authorizeWorkspace(db, request.principal!, permission, workspaceId);
    if (result.outcome === 'not-member') throw refusal(answers.notMember);
    if (result.outcome === 'missing-permission') throw refusal(answers.missingPermission(permission));
  }

  /** preHandler: the permission on the :programId path, its program into request.authorizedProgram. */
  function authorize(family: GuardedFamily, permission: Permission) {
    return async function authorizeProgramParam(request: FastifyRequest) {
      const { programId } = request.params as { programId: number };
      request.authorizedProgram = await checkProgram(request, family, permission, programId);
    };
  }

  function require(family: GuardedFamily, permission: Permission): { onRequest: ReturnType<typeof authenticate>; preHandler: ReturnType<typeof authorize> };
  function require(family: Family): { onRequest: ReturnType<typeof authenticate> };
  function require(family: Family, permission?: Permission) {
    const onRequest = authenticate(family);
    return permission === undefined ? { onRequest } : { onRequest, preHandler: authorize(family as GuardedFamily, permission) };
  }

  /** The family's refusal for an account with no workspace to act in. */
  function noWorkspace(family: GuardedFamily): ApiErrorLike {
    const answers = REQUIREMENTS[family].refuse as { noWorkspace?: Answer };
    if (!answers.noWorkspace) throw new Error(`${family} has no answer for an account without a workspace`);
    return refusal(answers.noWorkspace);
  }

  return { authenticate, authorize, require, checkProgram, checkWorkspace, noWorkspace };
}

type ApiErrorLike = ReturnType<typeof refusal>;

export type Auth = ReturnType<typeof createAuth>;
