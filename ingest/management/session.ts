import type { FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import { revokeSession } from '../../domain/access/workspaces.js';
import { parseSessionHeader, type Auth } from '../http/auth.js';
import type { ZodApp } from '../http/schemas.js';
import { SignedOut, data, managementErrors } from './schemas.js';

/** The signed-in user: the management family's credential is a dashboard session, so its principal is a user. */
export function sessionUserOf(request: FastifyRequest): number {
  if (request.principal?.kind !== 'session') throw new Error('management routes run with a dashboard session');
  return request.principal.userId;
}

/** Sign-out: the presented session is deleted, so it stops working at once on every process. */
export function sessionRoutes(app: ZodApp, { db, auth }: { db: Database; auth: Auth }) {
  app.delete(
    '/session',
    {
      config: { surface: 'management' },
      ...auth.require('management'),
      schema: { summary: 'Sign out: revoke the dashboard session that makes this request', response: { 200: data(SignedOut), ...managementErrors } },
    },
    async (request) => {
      const presented = parseSessionHeader(request.headers.authorization);
      if (presented.kind === 'token') await revokeSession(db, presented.token);
      return { data: { signed_out: true as const } };
    },
  );
}
