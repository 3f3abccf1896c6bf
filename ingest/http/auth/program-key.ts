import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Database } from '../../../core/db.js';
import type { Principal } from '../../../domain/access/access.js';
import { createProgramKeyFinder, type ProgramKey } from '../../../domain/programs/api-keys.js';
import { ApiError } from '../errors.js';
import { M } from '../messages.js';
import { credentialOf, programKeyPrincipal } from './credentials.js';
import type { FailedAuthThrottle } from './failed-auth.js';
import { refusal } from './refusal.js';
import { REQUIREMENTS, type ProgramKeyFamily } from './requirements.js';

export interface RotationNotice {
  markedAt: Date;
  deadline: Date;
  docsUrl: string;
}

type ProgramKeyPrincipal = Extract<Principal, { kind: 'programKey' }>;

declare module 'fastify' {
  interface FastifyRequest {
    /** The program key's program, as track.ts reads it; the same caller as request.principal. */
    programKey?: ProgramKey;
    rotationNotice?: RotationNotice;
  }
}

export interface KeyAuthOptions {
  /** The route family of the requirement table: its 401 messages and whether no key is anonymous. */
  surface: ProgramKeyFamily;
  /** Must agree with the table (click and lead: no header or an empty token is a browser-mode call). */
  anonymousAllowed?: boolean;
  docsBaseUrl: string;
  /** Failed lookups counted per client address; past the limit, 429 before any lookup. */
  throttle: FailedAuthThrottle;
  now?: () => Date;
}

function rotationHeaders(notice: RotationNotice): Record<string, string> {
  return {
    Deprecation: `@${Math.floor(notice.markedAt.getTime() / 1000)}`,
    Sunset: notice.deadline.toUTCString(),
    Link: `<${notice.docsUrl}>; rel="deprecation"`,
  };
}

/** The key as track.ts and readiness read it. */
export const programKeyOf = (principal: ProgramKeyPrincipal): ProgramKey => ({
  programId: principal.programId,
  workspaceId: principal.workspaceId,
  rotationMarkedAt: principal.rotation?.markedAt ?? null,
  rotationDeadline: principal.rotation?.deadline ?? null,
});

/**
 * Resolves the program key of a request into request.principal (and request.programKey). A key
 * marked for rotation succeeds with deprecation headers (and a warnings array, added in onSend)
 * until its deadline; from the deadline on it answers 401 api_key_rotation_required.
 */
export function programKeyHook(db: Database, options: KeyAuthOptions) {
  const now = options.now ?? (() => new Date());
  const docsUrl = `${options.docsBaseUrl}/errors#api_key_rotation_required`;
  const requirement = REQUIREMENTS[options.surface];
  if (options.anonymousAllowed !== undefined && options.anonymousAllowed !== requirement.anonymous) {
    throw new Error(`${options.surface}: anonymousAllowed disagrees with the requirement table`);
  }
  const anonymous = requirement.anonymous;
  const refuse = requirement.refuse;
  const credential = credentialOf('programKey');
  const findKey = createProgramKeyFinder(db);

  async function resolveKey(request: FastifyRequest, reply: FastifyReply, token: string) {
    const key = await findKey(token);
    if (!key) throw (await options.throttle.failed(request)) ?? refusal(refuse.invalid);
    const principal = programKeyPrincipal(key, token);
    const { rotation } = principal;
    if (rotation) {
      const notice = { markedAt: rotation.markedAt, deadline: rotation.deadline, docsUrl };
      const headers = rotationHeaders(notice);
      if (now() >= rotation.deadline) {
        throw new ApiError(401, M.rotation.retired, {
          envelope: 'typed',
          code: M.rotation.code,
          extra: { hint: M.rotation.hint, docs_url: docsUrl },
          headers,
        });
      }
      reply.headers(headers);
      request.rotationNotice = notice;
    }
    request.principal = principal;
    request.programKey = programKeyOf(principal);
  }

  // Callback style: an anonymous browser call (most clicks) is decided without a promise.
  return function authenticate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const presented = credential.read(request.headers.authorization);
    if (presented.kind === 'absent' || presented.kind === 'empty') {
      if (anonymous) return done();
      return done(refusal(presented.kind === 'absent' ? refuse.malformed : refuse.missing));
    }
    if (presented.kind === 'malformed') return done(refusal(refuse.malformed));
    const throttled = options.throttle.check(request);
    if (throttled) return done(throttled);
    resolveKey(request, reply, presented.token).then(() => done(), done);
  };
}

/** onSend: a marked key's responses gain a top-level warnings array beside data. */
export function rotationWarnings(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void) {
  const notice = request.rotationNotice;
  // Callback style: every response passes here, and almost none carries a notice.
  if (!notice || typeof payload !== 'string' || !String(reply.getHeader('content-type') ?? '').includes('json')) {
    return done(null, payload);
  }
  const body = JSON.parse(payload) as Record<string, unknown>;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return done(null, payload);
  const rotateBy = notice.deadline.toISOString();
  body.warnings = [
    {
      code: M.rotation.code,
      message: M.rotation.warning(rotateBy),
      hint: M.rotation.hint,
      rotate_by: rotateBy,
      docs_url: notice.docsUrl,
    },
  ];
  done(null, JSON.stringify(body));
}
