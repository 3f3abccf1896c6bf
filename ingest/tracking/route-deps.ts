import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Database } from '../../core/db.js';
import { presentedKeyId, programKeyHook } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { credentialRateLimit, type CredentialRateLimit } from '../http/credential-rate-limit.js';
import { forbidden } from '../http/errors.js';
import { M } from '../http/messages.js';
import { rateLimitHook, type RateLimitStore } from '../http/rate-limit.js';
import type { ZodApp } from '../http/schemas.js';
import { exposeBrowserErrors, type BrowserErrorsHook } from './browser.js';

/** What the tracking plugin is given (ingest/app.ts). */
export interface TrackDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  rateLimits: RateLimitStore;
  clock: () => number;
  platformFeeBps: number;
  docsBaseUrl: string;
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;
export type TrackingSurface = 'click' | 'lead' | 'sale' | 'refund';

/** What every tracking route is built from. */
export interface TrackingRouteDeps {
  db: Database;
  platformFeeBps: number;
  /** Tracking bodies are small; anything larger is refused before parsing. */
  bodyLimit: number;
  /** A limit per client address: `max` requests a minute in `bucket`. */
  limitByIp(bucket: string, max: number): Hook;
  /** The program key check of a surface; `anonymousAllowed` for the browser's calls. */
  key(surface: TrackingSurface, anonymousAllowed: boolean): Hook;
  /** Sales and refunds share one budget per API key. */
  saleRefund: CredentialRateLimit;
  browserErrors: BrowserErrorsHook;
  /** A key and an additional_data.program_id naming another program do not go together. */
  checkProgramId(request: FastifyRequest, programId: number | undefined): void;
}

const BODY_LIMIT = 16 * 1024;

/** The hooks the tracking routes share, made once for the plugin. */
export function trackingRouteDeps(app: ZodApp, deps: TrackDeps): TrackingRouteDeps {
  const { db } = deps;
  return {
    db,
    platformFeeBps: deps.platformFeeBps,
    bodyLimit: BODY_LIMIT,
    limitByIp: (bucket, max) => rateLimitHook(deps.rateLimits, { bucket, limit: max, keyOf: (r) => r.clientAddress }, app.log, deps.clock),
    key: (surface, anonymousAllowed) => programKeyHook(db, { surface, anonymousAllowed, docsBaseUrl: deps.docsBaseUrl, throttle: deps.authThrottle }),
    // Per API key (the client address when no key, or a key not yet known to be real).
    saleRefund: credentialRateLimit(deps.rateLimits, { bucket: 'sale_refund', limit: 120, credentialOf: presentedKeyId }, app.log, deps.clock),
    browserErrors: exposeBrowserErrors(db),
    checkProgramId(request, programId) {
      if (request.programKey && programId !== undefined && programId !== request.programKey.programId) {
        throw forbidden(M.programIdMismatch);
      }
    },
  };
}
