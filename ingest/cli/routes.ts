import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { sql, type Database } from '../../core/db.js';
import { completeLogin, LOGIN_SESSION_TTL_MS, pollLogin, POLL_INTERVAL_SECONDS, startLogin } from '../../domain/access/cli-login.js';
import { runTestChain, runTestEvent } from '../../domain/tracking/test-chains.js';
import { createClickWriter } from '../../domain/tracking/clicks.js';
import { integrationFacts, integrationStatus } from '../../domain/programs/integration-status.js';
import { createProgram } from '../../domain/programs/programs.js';
import { workspacesOf } from '../../domain/access/workspaces.js';
import { createAuth, presentedKeyId } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { ApiError, badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { credentialRateLimit } from '../http/credential-rate-limit.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { PlatformError, TypedError, body, echo } from '../http/schemas.js';
import { hashSecret } from '../../domain/access/secrets.js';
import type { IdentityVerifier } from '../oidc/verifier.js';
import { StatusOk } from '../dashboard/routes.js';
import { Program, checkCommissionRate, commissionRate, commissionType, programDomain, programView, requiredText } from '../management/routes.js';

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

/** The CLI sends its poll secret in this header, never in the URL (which proxies log). */
export const POLL_SECRET_HEADER = 'x-poll-secret';
export const LOGIN_PAGE_PATH = '/cli/login';

export function publicBase(request: FastifyRequest, identity: CliIdentity): string {
  return identity.baseUrl() ?? `${request.protocol}://${request.host}`;
}

const { callbackMissing: CALLBACK_MISSING } = M.cli;
const requiredField = (message: string, max: number) =>
  z.string({ error: message }).min(1, message).max(max, message);

const CallbackBody = body({ state: requiredField(CALLBACK_MISSING, 256), id_token: requiredField(CALLBACK_MISSING, 16_384) });
const PollQuery = z.object({ state: z.string({ error: M.cli.pollMissingState }).min(1, M.cli.pollMissingState).max(256, M.cli.pollMissingState) });

const ADVERTISER = M.cli.advertiserId;
const InitBody = body({
  name: requiredText(200, 'name'),
  domain: programDomain,
  commission_type: commissionType,
  commission_rate: commissionRate,
  advertiser_id: z.number({ error: ADVERTISER }).int(ADVERTISER).positive(ADVERTISER).max(Number.MAX_SAFE_INTEGER, ADVERTISER).optional(),
});

const EVENT_TYPES = ['click', 'lead', 'sale'] as const;
/** Single mode `{ event_type }` or chain mode `{ type: "chain" }`, decided by validation. */
const TestEventBody = body({ event_type: z.unknown().optional(), type: z.unknown().optional() }).transform((b, ctx) => {
  if (b.type !== undefined) {
    if (b.type !== 'chain') ctx.addIssue({ code: 'custom', message: M.cli.chainType(echo(b.type)) });
    else if (b.event_type !== undefined) ctx.addIssue({ code: 'custom', message: M.cli.eventAndChain });
    return { mode: 'chain' as const };
  }
  const type = b.event_type;
  if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
    ctx.addIssue({ code: 'custom', message: M.cli.eventType(type === undefined ? '(none)' : echo(type)) });
    return z.NEVER;
  }
  return { mode: 'single' as const, eventType: type as (typeof EVENT_TYPES)[number] };
});

const data = <T extends z.ZodType>(shape: T) => z.object({ data: shape });

const StartOk = data(
  z.object({
    state: z.string(),
    poll_secret: z.string().describe(`Send it back in the ${POLL_SECRET_HEADER} header of /auth/poll; it never goes to the browser`),
    browser_url: z.string(),
    user_code: z.string().describe('Shown in the terminal and on the login page, to check they belong together'),
    poll_interval_seconds: z.number().int(),
    expires_in_seconds: z.number().int(),
    expires_at: z.string(),
  }),
);
const CallbackOk = data(z.object({ status: z.literal('authenticated'), email: z.string() }));
const PollOk = data(
  z.union([
    z.object({ status: z.literal('pending'), expires_at: z.string() }),
    z.object({ status: z.literal('expired') }),
    z.object({
      status: z.literal('complete'),
      token: z.string(),
      token_type: z.literal('Bearer'),
      expires_at: z.string(),
      user: z.object({ id: z.number().int(), email: z.string() }),
    }),
  ]),
);
const ProgramItem = z.object({
  id: z.number().int(),
  advertiser_id: z.number().int(),
  advertiser_name: z.string(),
  role: z.enum(['owner', 'member']),
  name: z.string(),
  domain: z.string(),
  commission_type: z.string(),
  commission_rate: z.number(),
  paymentTrackingMode: z.string(),
  api_token_masked: z.string().nullable(),
  created_at: z.string(),
});
const InitOk = data(z.object({ program: Program.extend({ advertiser_id: z.number().int() }), next_steps: z.array(z.string()) }));
const Fixtures = z.object({ partner_id: z.number().int(), aff_code: z.string(), affiliate_url: z.string(), created: z.boolean(), refreshed_at: z.string() });
const TestEventOk = data(
  z.union([
    z.object({ mode: z.literal('single'), test_mode: z.literal(true), event_type: z.enum(EVENT_TYPES), recorded: z.record(z.string(), z.unknown()) }),
    z.object({
      mode: z.literal('chain'),
      test_mode: z.literal(true),
      fixtures: Fixtures,
      steps: z.array(z.object({ step: z.enum(EVENT_TYPES), recorded: z.record(z.string(), z.unknown()) })),
      chains_left_this_hour: z.number().int(),
    }),
  ]),
);

const programsOfUser = sql(
  'cli.programs_of_user',
  `SELECT p.id, p.workspace_id AS advertiser_id, w.name AS advertiser_name, m.role, p.name, p.domain, p.commission_type,
          p.commission_rate, p.payment_tracking_mode AS "paymentTrackingMode", k.key_masked AS api_token_masked, p.created_at
     FROM members m
     JOIN workspaces w ON w.id = m.workspace_id
     JOIN programs p ON p.workspace_id = m.workspace_id
     LEFT JOIN program_api_keys k ON k.program_id = p.id
    WHERE m.user_id = $1
    ORDER BY p.workspace_id, p.id`,
);

// A retired program key answers 401 in the typed envelope (api_key_rotation_required).
const errors = { 400: PlatformError, 401: z.union([PlatformError, TypedError]), 403: PlatformError, 404: PlatformError, 500: PlatformError, 429: TypedError };

/**
 * The CLI endpoints under /api/v1/cli/: browser login (start, callback, poll), init and programs
 * with an account login token, status and test-event with a program key, and the retired
 * stripe-connect. 60 requests per minute per presented key once it is known to be real (the poll
 * secret while logging in), the client address for keyless calls and keys not yet known.
 */
export const cliRoutes: FastifyPluginAsync<CliDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { db, identity } = deps;
  const auth = createAuth({ db, docsBaseUrl: deps.docsBaseUrl, throttle: deps.authThrottle });
  const clicks = createClickWriter(db);
  const synthetic = { db, clicks, platformFeeBps: deps.platformFeeBps };

  const pollKey = (secret: string) => `poll:${hashSecret(secret)}`;
  const credentialOf = (r: FastifyRequest) => {
    const secret = r.headers[POLL_SECRET_HEADER];
    return presentedKeyId(r) ?? (typeof secret === 'string' && secret ? pollKey(secret) : undefined);
  };
  const limit = credentialRateLimit(deps.rateLimits, { bucket: 'cli', limit: 60, credentialOf }, app.log, deps.clock);
  // Before any route's own hooks: a refused request reaches no credential lookup. preParsing runs
  // after every onRequest hook, the routes' authentication included.
  app.addHook('onRequest', limit.beforeAuth);
  app.addHook('preParsing', (request, reply, _payload, done) => limit.afterAuth(request, reply, (err) => done(err)));

  const requireIdentity = () => {
    if (!identity) throw new Error('no OpenID provider is configured for the CLI login');
    return identity;
  };
  const userOf = (request: FastifyRequest) => {
    if (request.principal?.kind !== 'account') throw new Error('this CLI route runs with an account login token');
    return request.principal.userId;
  };
  const programOf = (request: FastifyRequest) => {
    if (request.principal?.kind !== 'programKey') throw new Error('this CLI route runs with a program key');
    return request.principal.programId;
  };

  app.post(
    '/auth/start',
    {
      config: { surface: 'cliAuthStart' },
      schema: { summary: 'Start a CLI browser login', response: { 200: StartOk, 429: TypedError, 500: PlatformError } },
    },
    async (request) => {
      const id = requireIdentity();
      const started = await startLogin(db);
      const url = new URL(LOGIN_PAGE_PATH, publicBase(request, id));
      url.searchParams.set('state', started.state);
      return {
        data: {
          state: started.state,
          poll_secret: started.pollSecret,
          browser_url: url.toString(),
          user_code: started.userCode,
          poll_interval_seconds: POLL_INTERVAL_SECONDS,
          expires_in_seconds: LOGIN_SESSION_TTL_MS / 1000,
          expires_at: started.expiresAt.toISOString(),
        },
      };
    },
  );

  app.post(
    '/auth/callback',
    {
      config: { surface: 'cliAuthCallback' },
      schema: { summary: 'Complete a CLI browser login with the id_token of the OpenID provider', body: CallbackBody, response: { 200: CallbackOk, ...errors } },
    },
    async (request) => {
      const id = requireIdentity();
      let email = '';
      await completeLogin(db, request.body.state, async (nonce) => {
        const identityClaims = await id.verifier.verify(request.body.id_token, nonce);
        email = identityClaims.email;
        return identityClaims;
      });
      return { data: { status: 'authenticated' as const, email } };
    },
  );

  app.get(
    '/auth/poll',
    {
      config: { surface: 'cliAuthPoll' },
      schema: { summary: 'Poll a CLI login; the token is handed out once, with the poll secret', querystring: PollQuery, response: { 200: PollOk, ...errors } },
    },
    async (request) => {
      const secret = request.headers[POLL_SECRET_HEADER];
      const result = await pollLogin(db, request.query.state, typeof secret === 'string' ? secret : undefined);
      // The secret belongs to a login: from now on its polls count against it, not the address.
      if (typeof secret === 'string') limit.remember(pollKey(secret));
      switch (result.status) {
        case 'pending':
          return { data: { status: 'pending' as const, expires_at: result.expiresAt.toISOString() } };
        case 'expired':
          return { data: { status: 'expired' as const } };
        case 'complete':
          return {
            data: { status: 'complete' as const, token: result.token, token_type: 'Bearer' as const, expires_at: result.expiresAt.toISOString(), user: result.user },
          };
      }
    },
  );

  app.post(
    '/init',
    {
      config: { surface: 'cliInit' },
      ...auth.require('cliInit'),
      schema: { summary: 'Create a program (account login token)', body: InitBody, response: { 200: InitOk, ...errors } },
    },
    async (request) => {
      const b = request.body;
      const memberships = await workspacesOf(db, userOf(request));
      if (memberships.length === 0) throw auth.noWorkspace('cliInit');
      let workspaceId = b.advertiser_id;
      if (workspaceId === undefined) {
        if (memberships.length > 1) throw badRequest(M.cli.advertiserRequired);
        workspaceId = memberships[0]!.workspaceId;
      }
      await auth.checkWorkspace(request, 'cliInit', 'program:write', workspaceId);
      checkCommissionRate(b.commission_type, b.commission_rate);
      const program = await createProgram(db, workspaceId, {
        name: b.name,
        domain: b.domain,
        commission_type: b.commission_type,
        commission_rate: b.commission_rate,
        attribution_window_days: 60,
        lead_auth: 'server_required',
        paymentTrackingMode: 'processor_connect',
        allowed_origins: [],
      });
      return {
        data: {
          program: { ...programView(program), advertiser_id: program.workspace_id },
          // Authentication rule 2: the key is created with the program but not returned here.
          next_steps: [
            'A workspace owner generates the API key in the dashboard program settings (it is shown once).',
            'Then: SVC_API_KEY=<key> svc status, and svc test-event --chain',
          ],
        },
      };
    },
  );

  app.get(
    '/programs',
    {
      config: { surface: 'cliPrograms' },
      ...auth.require('cliPrograms'),
      schema: { summary: "List the programs of the account's advertisers (account login token)", response: { 200: data(z.array(ProgramItem)), ...errors } },
    },
    async (request) => {
      const rows = await db.many<z.infer<typeof ProgramItem> & { created_at: Date | string }>(programsOfUser, [userOf(request)]);
      return { data: rows.map((r) => ({ ...r, created_at: new Date(r.created_at).toISOString() })) };
    },
  );

  // The spec: GET /status carries X-Request-ID only on its 500.
  const requestIdOnlyOn500 = (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (reply.statusCode !== 500) reply.removeHeader('X-Request-ID');
    done(null, payload);
  };

  app.get(
    '/status',
    {
      config: { surface: 'cliStatus' },
      ...auth.require('cliProgramKey'),
      onSend: requestIdOnlyOn500,
      schema: { summary: "The integration checklist of the key's program (program key)", response: { 200: StatusOk, ...errors } },
    },
    async (request) => {
      const programId = programOf(request);
      const facts = await integrationFacts(db, programId);
      if (!facts) throw new Error(`program ${programId} of a valid key has no row`);
      return { data: integrationStatus(programId, facts, new Date(deps.clock())) };
    },
  );

  app.post(
    '/test-event',
    {
      config: { surface: 'cliTestEvent' },
      ...auth.require('cliProgramKey'),
      schema: { summary: 'Run a synthetic test event, or the click-lead-sale chain (program key)', body: TestEventBody, response: { 200: TestEventOk, ...errors } },
    },
    async (request) => {
      const programId = programOf(request);
      const b = request.body;
      if (b.mode === 'single') {
        const { event } = await runTestEvent(synthetic, programId, b.eventType);
        const { event_type, ...recorded } = event;
        return { data: { mode: 'single' as const, test_mode: true as const, event_type, recorded } };
      }
      const chain = await runTestChain(synthetic, programId);
      const f = chain.fixtures;
      return {
        data: {
          mode: 'chain' as const,
          test_mode: true as const,
          fixtures: { partner_id: f.partnerId, aff_code: f.affCode, affiliate_url: f.affiliateUrl, created: f.created, refreshed_at: f.refreshedAt.toISOString() },
          steps: chain.steps.map(({ event_type, ...recorded }) => ({ step: event_type, recorded })),
          chains_left_this_hour: chain.chainsLeftThisHour,
        },
      };
    },
  );

  // Retired: the processor is connected from the dashboard now.
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/stripe-connect',
    config: { surface: 'cliRetired' },
    schema: { summary: 'Retired: always 410', response: { 410: PlatformError } },
    handler: async () => {
      throw new ApiError(410, M.cli.processorConnectGone);
    },
  });
};
