import type { Database } from '../../core/db.js';
import { revokeSession } from '../../domain/access/workspaces.js';
import { parseSessionHeader, type Auth } from '../http/auth.js';
import type { ZodApp } from '../http/schemas.js';
import { SignedOut, data, managementErrors } from './schemas.js';

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
