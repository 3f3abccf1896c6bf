import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import { portalSessionOf, PORTAL_SESSION_LIFETIME_MS, type PortalSession } from '../../domain/partners/portal-sessions.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { unauthorized } from '../http/errors.js';
import { PM } from './messages.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The partner portal session of the request (its cookie), set by the portal's hook. */
    portalSession?: PortalSession;
  }
}

/** The portal session's cookie: HttpOnly, SameSite=Lax (no cross-site post carries it), Secure over https. */
export const PORTAL_COOKIE = 'svc_portal';
const TOKEN = /^pps_[A-Za-z0-9_-]{32}$/;

/** The portal token of the request's Cookie header, when it has the form of one. */
export function portalTokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === PORTAL_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return TOKEN.test(value) ? value : undefined;
    }
  }
  return undefined;
}

const cookie = (request: FastifyRequest, value: string, maxAgeSeconds: number) =>
  `${PORTAL_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${request.protocol === 'https' ? '; Secure' : ''}`;

export const setPortalCookie = (request: FastifyRequest, reply: FastifyReply, token: string) =>
  reply.header('set-cookie', cookie(request, token, Math.floor(PORTAL_SESSION_LIFETIME_MS / 1000)));
export const clearPortalCookie = (request: FastifyRequest, reply: FastifyReply) => reply.header('set-cookie', cookie(request, '', 0));

/**
 * The session of a request, or undefined: one lookup by the token's hash. Failed lookups count
 * against the client address like any other credential's (ingest/http/auth/failed-auth.ts).
 */
export async function resolvePortalSession(db: Database, throttle: FailedAuthThrottle, request: FastifyRequest): Promise<PortalSession | undefined> {
  const token = portalTokenOf(request);
  if (!token) return undefined;
  const throttled = throttle.check(request);
  if (throttled) throw throttled;
  const session = await portalSessionOf(db, token);
  if (!session) {
    const tooMany = await throttle.failed(request);
    if (tooMany) throw tooMany;
  }
  return session;
}

/** onRequest of every /api/partner/v1 route: 401 without a live portal session. */
export function requirePortalSession(db: Database, throttle: FailedAuthThrottle) {
  return async function portalSession(request: FastifyRequest) {
    const session = await resolvePortalSession(db, throttle, request);
    if (!session) throw unauthorized(PM.portal.sessionRequired);
    request.portalSession = session;
  };
}
