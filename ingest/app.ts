import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { TrackingConfig, TrustProxy } from '../core/config.js';
import type { Database } from '../core/db.js';
import type { SecretBox } from '../core/secret-box.js';
import type { Warehouse } from '../core/warehouse.js';
import { rotationWarnings } from './http/auth.js';
import { errorHandler, registerErrorHandling } from './http/errors.js';
import { createFailedAuthThrottle, type FailedAuthThrottle } from './http/auth/failed-auth.js';
import { decorateClientAddress, DEFAULT_IPV6_PREFIX } from './http/client-address.js';
import type { RateLimitStore } from './http/rate-limit.js';
import { lazyRequestLoggers } from './http/request-log.js';
import { cliLoginPageRoutes } from './cli/login-page.js';
import type { CliIdentity } from './cli/context.js';
import { cliRoutes } from './cli/routes.js';
import { agentRoutes } from './agent/routes.js';
import { dashboardPageRoutes } from './dashboard/page.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { managementRoutes } from './management/routes.js';
import { moneyRoutes } from './money/routes.js';
import { processorConnectionRoutes } from './payments/connection.js';
import { PROCESSOR_WEBHOOK_RATE_LIMIT, processorWebhookRoutes } from './payments/webhooks.js';
import { readinessRoutes } from './tracking/readiness.js';
import { trackRoutes } from './tracking/routes.js';
import { trackerScriptRoutes } from './tracking/tracker-script.js';
import { webhookRoutes } from './webhooks/routes.js';
import { auditRoutes } from './audit/routes.js';
import { partnerProgramRoutes } from './partner-portal/routes.js';
import { termsRoutes } from './terms/routes.js';
import { systemResolver, type Resolver } from '../core/outbound-address.js';

export interface AppDeps {
  db: Database;
  rateLimits: RateLimitStore;
  logger: Logger;
  /** The proxies whose X-Forwarded-For is believed (config TRUST_PROXY); never every hop. */
  trustProxy: TrustProxy;
  tracking: TrackingConfig;
  /** Failed authentications per client address and minute before 429 (default AUTH_FAILURES_PER_MINUTE). */
  authFailuresPerMinute?: number;
  /** Milliseconds since the epoch; rate-limit windows are read from it. */
  clock?: () => number;
  /** The warehouse behind the dashboard's performance figures; without it that route answers 500. */
  warehouse?: Warehouse;
  /** The OpenID provider of the CLI's browser login; without it the login endpoints answer 500. */
  cliIdentity?: CliIdentity;
  /** The payment processor's webhook signing secrets, read per event; without any every event answers 400. */
  processorWebhookSecrets?: () => readonly string[];
  /**
   * Seals the secrets read back later (processor accounts' webhook secrets, core/secret-box.ts);
   * without it connecting a processor account answers 500 and accounts' own URLs refuse every event.
   */
  secretBox?: SecretBox;
  /** The service's public base URL (PUBLIC_BASE_URL) for the absolute URLs it hands out; else the request's origin. */
  publicBaseUrl?: () => string | undefined;
  /** IPv6 clients are counted per network of this many bits (config RATE_LIMIT_IPV6_PREFIX; 64 unless given). */
  clientIpv6Prefix?: number;
  /** Processor webhook requests a minute per client address (config PROCESSOR_WEBHOOK_RATE_LIMIT; 6,000 unless given). */
  processorWebhookRateLimit?: number;
  /**
   * Outgoing webhook endpoints (issue 32): whether private addresses and http:// are allowed
   * (WEBHOOK_ALLOW_PRIVATE_URLS; refused unless given), and the resolver a URL's host is checked with.
   */
  webhooks?: { allowPrivateUrls: boolean; resolve?: Resolver };
}

const MANAGEMENT_BODY_LIMIT = 64 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** What every surface is registered with: the app's deps, the clock and the failed-authentication throttle settled. */
interface Wiring extends AppDeps {
  clock: () => number;
  authThrottle: FailedAuthThrottle;
}

/** One API surface (a folder of ingest/): its plugins under their prefixes, given what they need of the wiring. */
type RegisterSurface = (app: FastifyInstance, wiring: Wiring) => Promise<void>;

const tracking: RegisterSurface = async (app, { db, rateLimits, authThrottle, clock, tracking: { platformFeeBps, docsBaseUrl } }) => {
  await app.register(trackRoutes, { prefix: '/api/v1/track', db, rateLimits, authThrottle, clock, platformFeeBps, docsBaseUrl });
  await app.register(readinessRoutes, { prefix: '/api/v1/programs', db, rateLimits, authThrottle, clock, docsBaseUrl });
  await app.register(trackerScriptRoutes);
};

const cli: RegisterSurface = async (app, { db, rateLimits, authThrottle, clock, tracking: { platformFeeBps, docsBaseUrl }, cliIdentity }) => {
  await app.register(cliRoutes, { prefix: '/api/v1/cli', db, rateLimits, authThrottle, clock, docsBaseUrl, platformFeeBps, identity: cliIdentity });
  await app.register(cliLoginPageRoutes, { db, identity: cliIdentity });
};

const payments: RegisterSurface = async (app, w) => {
  const { db, clock, secretBox } = w;
  await app.register(processorWebhookRoutes, {
    prefix: '/api/v1/webhooks',
    db,
    clock,
    platformFeeBps: w.tracking.platformFeeBps,
    webhookSecrets: w.processorWebhookSecrets ?? (() => []),
    secretBox,
    rateLimits: w.rateLimits,
    rateLimit: w.processorWebhookRateLimit ?? PROCESSOR_WEBHOOK_RATE_LIMIT,
  });
  await app.register(processorConnectionRoutes, {
    prefix: '/api/tracking', db, authThrottle: w.authThrottle, secretBox, clock, publicBaseUrl: w.publicBaseUrl ?? (() => undefined),
  });
};

const management: RegisterSurface = async (app, w) => {
  await app.register(managementRoutes, {
    prefix: '/api/tracking',
    db: w.db,
    authThrottle: w.authThrottle,
    rateLimits: w.rateLimits,
    clock: w.clock,
    identity: w.cliIdentity,
    warehouse: w.warehouse,
    publicBaseUrl: w.publicBaseUrl ?? (() => undefined),
  });
};

const dashboard: RegisterSurface = async (app, { db, warehouse, clock, authThrottle }) => {
  await app.register(dashboardRoutes, { prefix: '/api/tracking', db, warehouse, clock, authThrottle });
  await app.register(dashboardPageRoutes);
};

const agent: RegisterSurface = async (app, { db, warehouse, rateLimits, clock, authThrottle }) => {
  await app.register(agentRoutes, { prefix: '/api/agent/v1', db, warehouse, rateLimits, clock, authThrottle });
};

const webhooks: RegisterSurface = async (app, { db, authThrottle, secretBox, clock, webhooks: settings }) => {
  const policy = { allowPrivate: settings?.allowPrivateUrls ?? false, resolve: settings?.resolve ?? systemResolver };
  await app.register(webhookRoutes, { prefix: '/api/tracking', db, authThrottle, secretBox, policy, clock });
};

const money: RegisterSurface = async (app, { db, authThrottle, clock }) => {
  await app.register(moneyRoutes, { prefix: '/api/tracking', db, authThrottle, clock });
};

const audit: RegisterSurface = async (app, { db, authThrottle }) => {
  await app.register(auditRoutes, { prefix: '/api/tracking', db, authThrottle });
};

const terms: RegisterSurface = async (app, { db, authThrottle, warehouse }) => {
  await app.register(termsRoutes, { prefix: '/api/tracking', db, authThrottle, warehouse });
};

const partnerProgram: RegisterSurface = async (app, w) => {
  await app.register(partnerProgramRoutes, {
    db: w.db, warehouse: w.warehouse, rateLimits: w.rateLimits, authThrottle: w.authThrottle, clock: w.clock, publicBaseUrl: w.publicBaseUrl ?? (() => undefined),
  });
};

/** Every API surface, in the order the OpenAPI document lists them. Adding a surface is adding it here. */
const API_SURFACES: readonly RegisterSurface[] = [tracking, cli, payments, management, dashboard, agent, webhooks, money, audit, terms, partnerProgram];

/** Fastify with the service's request ids, zod compilers, error envelopes and client addresses. */
function createServer(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    trustProxy: deps.trustProxy,
    bodyLimit: MANAGEMENT_BODY_LIMIT,
    // A caller's own X-Request-ID is kept when it is a plain token; otherwise we mint one.
    // Errors Fastify raises before routing (an undecodable URL) get the platform envelope too.
    frameworkErrors: (error, request, reply) => {
      reply.header('X-Request-ID', request.id);
      return errorHandler(error, request, reply);
    },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    childLoggerFactory: lazyRequestLoggers,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  decorateClientAddress(app, deps.clientIpv6Prefix ?? DEFAULT_IPV6_PREFIX);
  return app;
}

/** The body parsers and the hooks every request passes, before any surface's own. */
function registerCommonHandling(app: FastifyInstance) {
  // JSON, and text/plain carrying JSON (what navigator.sendBeacon sends without a preflight).
  // __proto__ and constructor.prototype keys are refused by the parser.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, (request, payload, done) => {
    if (payload === '') return done(null, {});
    parseJson(request, payload as string, done);
  });

  // Hooks that run on every request take a callback rather than returning a promise: no promise
  // and no extra microtask per hook.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-ID', request.id);
    done();
  });
  // A body-less POST validates as an empty object, so it gets the field's own "is required" message.
  app.addHook('preValidation', (request: FastifyRequest, _reply, done) => {
    if (request.body === undefined && (request.method === 'POST' || request.method === 'PATCH')) request.body = {};
    done();
  });
  app.addHook('onSend', rotationWarnings);
}

const OPENAPI = {
  info: {
    title: 'Affiliate tracking service',
    version: '1.0.0',
    description:
      'Tracking (click, lead, sale, refund), readiness and program management. A program key marked for rotation ' +
      'adds Deprecation, Sunset and Link headers and a top-level warnings array to every response.',
  },
  components: {
    securitySchemes: {
      programKey: { type: 'http', scheme: 'bearer', description: 'Program API key (aff_...)' },
      dashboardSession: { type: 'http', scheme: 'bearer', description: 'Dashboard session token' },
      accountToken: { type: 'http', scheme: 'bearer', description: 'Account login token from `svc login` (CLI init and programs)' },
      agentKey: { type: 'http', scheme: 'bearer', description: 'Agent API key (agt_...), issued by `npm run ops -- issue-agent-key`' },
      partnerPortalSession: { type: 'apiKey', in: 'cookie', name: 'svc_portal', description: 'Partner portal session, opened by a one-time sign-in link (issue 31)' },
    },
  },
} as const;

/** Builds the HTTP service; the entry point only wires config, listens and handles signals. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = createServer(deps);
  registerCommonHandling(app);
  await app.register(swagger, { openapi: OPENAPI, transform: jsonSchemaTransform });

  const clock = deps.clock ?? Date.now;
  const authThrottle = createFailedAuthThrottle({ store: deps.rateLimits, log: app.log, clock, limit: deps.authFailuresPerMinute });
  for (const register of API_SURFACES) await register(app, { ...deps, clock, authThrottle });

  app.get('/openapi.json', { config: { surface: 'other' }, schema: { hide: true } }, async () => app.swagger());
  app.get('/healthz', { config: { surface: 'other' }, schema: { hide: true } }, async () => ({ ok: true }));
  return app;
}
