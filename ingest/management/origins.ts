import type { Database } from '../../core/db.js';
import { blockedOrigins } from '../../domain/programs/blocked-origins.js';
import { addAllowedOrigin, removeAllowedOrigin } from '../../domain/programs/origins.js';
import { getProgram } from '../../domain/programs/programs.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { OriginQuery, OriginRequest, Origins, ProgramDetail } from './console-schemas.js';
import { data, managementErrors, programView } from './schemas.js';

const config = { surface: 'management' as const };

/**
 * One program as its settings screen shows it (with the origins whose clicks were refused), and
 * its allowed origins added or removed one at a time: two people editing the list at once never
 * undo each other's change, as a PATCH of the whole list could.
 */
export function originRoutes(app: ZodApp, { db, auth }: { db: Database; auth: Auth }) {
  const write = auth.require('management', 'program:write');

  app.get(
    '/programs/:programId',
    {
      config,
      ...auth.require('management', 'tracking:read'),
      schema: { summary: "A program's settings, with the origins its browser clicks were refused from", params: programIdParam, response: { 200: data(ProgramDetail), ...managementErrors } },
    },
    async (request) => {
      const { programId } = request.params;
      const [program, blocked] = await Promise.all([getProgram(db, programId), blockedOrigins(db, programId)]);
      return {
        data: {
          ...programView(program!),
          blocked_origins: blocked.map((b) => ({ ...b, first_seen_at: b.first_seen_at.toISOString(), last_seen_at: b.last_seen_at.toISOString() })),
        },
      };
    },
  );

  app.post(
    '/programs/:programId/allowed-origins',
    {
      config,
      ...write,
      schema: { summary: 'Allow one more origin for browser clicks and leads', params: programIdParam, body: OriginRequest, response: { 200: data(Origins), ...managementErrors } },
    },
    async (request) => {
      const change = await addAllowedOrigin(db, request.params.programId, request.body.origin, auditContextOf(request));
      if (change.outcome === 'full') throw new ApiError(409, M.management.originLimit);
      if (change.outcome === 'not-listed') throw new Error('adding an origin cannot find it missing');
      return { data: { allowed_origins: change.origins } };
    },
  );

  app.delete(
    '/programs/:programId/allowed-origins',
    {
      config,
      ...write,
      schema: { summary: 'Remove one allowed origin (?origin=https://...)', params: programIdParam, querystring: OriginQuery, response: { 200: data(Origins), ...managementErrors } },
    },
    async (request) => {
      const change = await removeAllowedOrigin(db, request.params.programId, request.query.origin, auditContextOf(request));
      if (change.outcome === 'not-listed') throw new ApiError(404, M.management.originNotListed);
      if (change.outcome === 'full') throw new Error('removing an origin cannot find the list full');
      return { data: { allowed_origins: change.origins } };
    },
  );
}
