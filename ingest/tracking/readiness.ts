import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import { computeReadiness } from '../../domain/programs/readiness.js';
import { createAuth, presentedKeyId, programKeyOf } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { credentialRateLimit } from '../http/credential-rate-limit.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { ReadinessResponse, TypedError } from './schemas.js';

export interface ReadinessDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  rateLimits: RateLimitStore;
  clock: () => number;
  docsBaseUrl: string;
}

export const readinessRoutes: FastifyPluginAsync<ReadinessDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const limit = credentialRateLimit(deps.rateLimits, { bucket: 'readiness', limit: 30, credentialOf: presentedKeyId }, app.log, deps.clock);
  const auth = createAuth({ db: deps.db, docsBaseUrl: deps.docsBaseUrl, throttle: deps.authThrottle });
  app.get(
    '/me/readiness',
    {
      config: { surface: 'readiness' },
      onRequest: [limit.beforeAuth, auth.authenticate('readiness'), limit.afterAuth],
      schema: {
        summary: 'Is this program ready to go live?',
        response: { 200: ReadinessResponse, 401: TypedError, 429: TypedError, 500: TypedError },
      },
    },
    async (request) => {
      if (request.principal?.kind !== 'programKey') throw new Error('readiness runs with a program key');
      return { data: await computeReadiness(deps.db, programKeyOf(request.principal)) };
    },
  );
};
