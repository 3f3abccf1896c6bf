import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { computeReadiness } from '../../domain/programs/readiness.js';
import { createAuth, presentedKeyId, programKeyOf } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { credentialRateLimit } from '../http/credential-rate-limit.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { TypedError } from '../http/schemas.js';

export interface ReadinessDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  rateLimits: RateLimitStore;
  clock: () => number;
  docsBaseUrl: string;
}

const Check = z.object({ name: z.string(), ok: z.boolean(), detail: z.string() });

const ReadinessOk = z.object({
  data: z.object({
    program_id: z.number().int(),
    ready: z.boolean(),
    api_key: z.object({ state: z.enum(['active', 'marked_for_rotation']), rotate_by: z.string().nullable() }),
    payment_tracking_mode: z.enum(['processor_connect', 's2s']),
    lead_auth: z.enum(['server_required', 'browser_allowed']),
    allowed_origins_count: z.number().int(),
    partners: z.object({ approved: z.number().int() }),
    referral_links: z.object({ enabled: z.number().int() }),
    test_events: z.object({ click: z.number().int(), lead: z.number().int(), sale: z.number().int() }),
    checks: z.array(Check),
    transaction_id_collisions: z.array(z.object({ transaction_id: z.string(), attempts: z.number().int(), last_seen_at: z.string() })),
    checked_at: z.string(),
  }),
});

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
        response: { 200: ReadinessOk, 401: TypedError, 429: TypedError, 500: TypedError },
      },
    },
    async (request) => {
      if (request.principal?.kind !== 'programKey') throw new Error('readiness runs with a program key');
      return { data: await computeReadiness(deps.db, programKeyOf(request.principal)) };
    },
  );
};
