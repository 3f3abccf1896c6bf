import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Database } from '../../core/db.js';
import { findProgramKey, type ProgramKey } from '../domain/api-keys.js';
import { hashSecret } from '../domain/secrets.js';
import { ApiError, typedError, unauthorized, type Surface } from './errors.js';
import { M } from './messages.js';

export type BearerHeader =
  | { kind: 'absent' }
  | { kind: 'malformed' }
  | { kind: 'empty' }
  | { kind: 'token'; token: string };

export function parseBearer(header: string | undefined): BearerHeader {
  if (header === undefined) return { kind: 'absent' };
  // HTTP strips a header value's trailing whitespace, so `Bearer ` with an empty token arrives as
  // `Bearer`: the scheme alone is that empty token, not a malformed header.
  if (header === 'Bearer') return { kind: 'empty' };
  if (!header.startsWith('Bearer ')) return { kind: 'malformed' };
  const token = header.slice('Bearer '.length).trim();
  return token === '' ? { kind: 'empty' } : { kind: 'token', token };
}

/** The presented key, hashed: what rate limits count per key without keeping the key. */
export function presentedKeyId(request: FastifyRequest): string | undefined {
  const bearer = parseBearer(request.headers.authorization);
  return bearer.kind === 'token' ? hashSecret(bearer.token) : undefined;
}

type KeyFailure = 'malformed' | 'missing' | 'invalid';

/** The spec words its 401s differently per surface; this is the one place that knows how. */
function keyFailure(surface: Surface, failure: KeyFailure): ApiError {
  if (surface === 'readiness') return typedError(401, 'invalid_key', M.readiness[failure]);
  if (surface === 'refund' && failure === 'missing') return unauthorized(M.auth.invalid);
  return unauthorized(M.auth[failure]);
}

export interface RotationNotice {
  markedAt: Date;
  deadline: Date;
  docsUrl: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    programKey?: ProgramKey;
    rotationNotice?: RotationNotice;
  }
}

export interface KeyAuthOptions {
  surface: Surface;
  /** Lead and click: no header or an empty token means an anonymous (browser-mode) call. */
  anonymousAllowed: boolean;
  docsBaseUrl: string;
  now?: () => Date;
}

function rotationHeaders(notice: RotationNotice): Record<string, string> {
  return {
    Deprecation: `@${Math.floor(notice.markedAt.getTime() / 1000)}`,
    Sunset: notice.deadline.toUTCString(),
    Link: `<${notice.docsUrl}>; rel="deprecation"`,
  };
}

/**
 * Resolves the program key of a request into request.programKey. A key marked for rotation
 * succeeds with deprecation headers (and a warnings array, added in onSend) until its deadline;
 * from the deadline on it answers 401 api_key_rotation_required.
 */
export function programKeyHook(db: Database, options: KeyAuthOptions) {
  const now = options.now ?? (() => new Date());
  const docsUrl = `${options.docsBaseUrl}/errors#api_key_rotation_required`;

  async function resolveKey(request: FastifyRequest, reply: FastifyReply, token: string) {
    const key = await findProgramKey(db, token);
    if (!key) throw keyFailure(options.surface, 'invalid');
    if (key.rotationMarkedAt && key.rotationDeadline) {
      const notice = { markedAt: key.rotationMarkedAt, deadline: key.rotationDeadline, docsUrl };
      const headers = rotationHeaders(notice);
      if (now() >= key.rotationDeadline) {
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
    request.programKey = key;
  }

  // Callback style: an anonymous browser call (most clicks) is decided without a promise.
  return function authenticate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const bearer = parseBearer(request.headers.authorization);
    if (bearer.kind === 'absent' || bearer.kind === 'empty') {
      if (options.anonymousAllowed) return done();
      return done(keyFailure(options.surface, bearer.kind === 'absent' ? 'malformed' : 'missing'));
    }
    if (bearer.kind === 'malformed') return done(keyFailure(options.surface, 'malformed'));
    resolveKey(request, reply, bearer.token).then(() => done(), done);
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
