import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import { auditPage } from '../../domain/audit/log.js';
import { createAuth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { PlatformError, programIdParam } from '../http/schemas.js';
import { AuditPage, AuditQuery, auditPageBody } from './schemas.js';

export interface AuditRoutesDeps {
  db: Database;
  authThrottle: FailedAuthThrottle;
}

const errors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 500: PlatformError };

/**
 * A program's audit log (dashboard session): owners and members read it, as every brand-side read
 * (partner-program.md). Nobody writes it here: the domain's writes append to it.
 */
export const auditRoutes: FastifyPluginAsync<AuditRoutesDeps> = async (fastify, { db, authThrottle }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db, throttle: authThrottle });
  app.get(
    '/programs/:programId/audit-log',
    {
      config: { surface: 'management' },
      ...auth.require('management', 'tracking:read'),
      schema: {
        summary: "The program's audit log, newest first: every brand-side write with its actor, before and after, and request id",
        params: programIdParam,
        querystring: AuditQuery,
        response: { 200: AuditPage, ...errors },
      },
    },
    async (request) => auditPageBody(await auditPage(db, request.params.programId, { limit: request.query.limit, after: request.query.cursor })),
  );
};
