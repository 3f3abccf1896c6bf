import type { FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import type { Auth } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import type { IdentityVerifier } from '../oidc/verifier.js';

/** How the CLI's browser login reaches its OpenID provider and the login page. */
export interface CliIdentity {
  verifier: IdentityVerifier;
  /** The service's public base URL for the browser link; the request's own origin when undefined. */
  baseUrl: () => string | undefined;
}

export interface CliDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  rateLimits: RateLimitStore;
  clock: () => number;
  docsBaseUrl: string;
  platformFeeBps: number;
  /** Without it the login endpoints answer 500 (no provider configured). */
  identity: CliIdentity | undefined;
}

/** What every CLI route module is given by the plugin (ingest/cli/routes.ts) that registers it. */
export interface CliRouteContext {
  deps: CliDeps;
  auth: Auth;
  /** The poll secret belongs to a real login: its later polls count against it, not the address. */
  rememberPollSecret(secret: string): void;
}

export function publicBase(request: FastifyRequest, identity: CliIdentity): string {
  return identity.baseUrl() ?? `${request.protocol}://${request.host}`;
}
