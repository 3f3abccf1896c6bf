import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import { originAllowedAnywhere } from '../../domain/programs/origins.js';
import type { ZodApp } from '../http/schemas.js';

/**
 * CORS of the two routes a browser may call, click and lead: answered only for origins a program
 * allows (domain/programs/origins.ts).
 */

export type BrowserErrorsHook = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) => void;

/** The preflights of /click and /lead. */
export function preflightRoutes(app: ZodApp, db: Database) {
  for (const path of ['/click', '/lead']) {
    app.options(path, { config: { surface: path === '/click' ? 'click' : 'lead' }, schema: { hide: true } }, async (request, reply) => {
      const origin = request.headers.origin;
      if (origin && (await originAllowedAnywhere(db, origin))) {
        reply
          .header('Access-Control-Allow-Origin', origin)
          .header('Access-Control-Allow-Methods', 'POST')
          .header('Access-Control-Allow-Headers', 'Content-Type')
          .header('Access-Control-Max-Age', '600')
          .header('Vary', 'Origin');
      }
      return reply.status(204).send();
    });
  }
}

/** A success for a browser caller (no key): the origin was checked by the write itself. */
export function allowBrowser(request: FastifyRequest, reply: FastifyReply) {
  const origin = request.headers.origin;
  if (origin && !request.programKey) reply.header('Access-Control-Allow-Origin', origin).header('Vary', 'Origin');
}

/**
 * A refusal (400, 403, 410, 429) is readable by a page on an origin some program allows, so the
 * browser SDK can report why; an origin no program lists learns nothing, as for the preflight.
 */
export function exposeBrowserErrors(db: Database): BrowserErrorsHook {
  // Callback style: a successful click passes through without a promise (see the click path in docs/architecture.md).
  return (request, reply, payload, done) => {
    const origin = request.headers.origin;
    if (reply.statusCode < 400 || !origin || request.programKey || reply.hasHeader('Access-Control-Allow-Origin')) return done(null, payload);
    originAllowedAnywhere(db, origin).then(
      (allowed) => {
        if (allowed) reply.header('Access-Control-Allow-Origin', origin).header('Vary', 'Origin');
        done(null, payload);
      },
      // The answer stands without the header; the page then sees a network error.
      () => done(null, payload),
    );
  };
}
