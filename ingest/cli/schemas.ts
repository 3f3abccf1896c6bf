/**
 * The CLI surface's contract (/api/v1/cli/): every request and response body, defined once. The
 * routes validate, serialize and document with these, and the `svc` command's wire types are
 * derived from them. Each response is exported twice: its `data` (what the command reads, e.g.
 * LoginStartData) and the envelope the route answers (LoginStartResponse = { data }).
 */
import { z } from 'zod';
import { M } from '../http/messages.js';
import { PlatformError, TypedError, body, echo } from '../http/schemas.js';
import { IntegrationStatus } from '../dashboard/schemas.js';
import { Program, commissionRate, commissionType, programDomain, requiredText } from '../management/schemas.js';

/** The error envelopes the CLI routes answer with (ingest/http/errors.ts renders them). */
export { PlatformError, TypedError };

/** The CLI sends its poll secret in this header, never in the URL (which proxies log). */
export const POLL_SECRET_HEADER = 'x-poll-secret';

const data = <T extends z.ZodType>(shape: T) => z.object({ data: shape });

// Requests

const { callbackMissing: CALLBACK_MISSING } = M.cli;
const requiredField = (message: string, max: number) => z.string({ error: message }).min(1, message).max(max, message);

/** POST /auth/callback: the login session and the provider's id_token (from the login page). */
export const LoginCallbackRequest = body({ state: requiredField(CALLBACK_MISSING, 256), id_token: requiredField(CALLBACK_MISSING, 16_384) });

/** GET /auth/poll?state=…; the poll secret travels in the POLL_SECRET_HEADER header. */
export const LoginPollQuery = z.object({ state: z.string({ error: M.cli.pollMissingState }).min(1, M.cli.pollMissingState).max(256, M.cli.pollMissingState) });

const ADVERTISER = M.cli.advertiserId;
/** POST /init: a new program, in the management API's field words; advertiser_id when the account has several. */
export const InitRequest = body({
  name: requiredText(200, 'name'),
  domain: programDomain,
  commission_type: commissionType,
  commission_rate: commissionRate,
  advertiser_id: z.number({ error: ADVERTISER }).int(ADVERTISER).positive(ADVERTISER).max(Number.MAX_SAFE_INTEGER, ADVERTISER).optional(),
});

export const TEST_EVENT_TYPES = ['click', 'lead', 'sale'] as const;
type TestEventType = (typeof TEST_EVENT_TYPES)[number];

/**
 * POST /test-event: single mode `{ event_type }` or chain mode `{ type: "chain" }`, decided by
 * validation (the fields are read loosely so each wrong combination gets its own message).
 */
export const TestEventRequest = body({ event_type: z.unknown().optional(), type: z.unknown().optional() }).transform((b, ctx) => {
  if (b.type !== undefined) {
    if (b.type !== 'chain') ctx.addIssue({ code: 'custom', message: M.cli.chainType(echo(b.type)) });
    else if (b.event_type !== undefined) ctx.addIssue({ code: 'custom', message: M.cli.eventAndChain });
    return { mode: 'chain' as const };
  }
  const type = b.event_type;
  if (typeof type !== 'string' || !(TEST_EVENT_TYPES as readonly string[]).includes(type)) {
    ctx.addIssue({ code: 'custom', message: M.cli.eventType(type === undefined ? '(none)' : echo(type)) });
    return z.NEVER;
  }
  return { mode: 'single' as const, eventType: type as TestEventType };
});

// Responses: the data, then the route's envelope

export const LoginStartData = z.object({
  state: z.string(),
  poll_secret: z.string().describe(`Send it back in the ${POLL_SECRET_HEADER} header of /auth/poll; it never goes to the browser`),
  browser_url: z.string(),
  user_code: z.string().describe('Shown in the terminal and on the login page, to check they belong together'),
  poll_interval_seconds: z.number().int(),
  expires_in_seconds: z.number().int(),
  expires_at: z.string(),
});
export const LoginStartResponse = data(LoginStartData);

export const LoginCallbackData = z.object({ status: z.literal('authenticated'), email: z.string() });
export const LoginCallbackResponse = data(LoginCallbackData);

export const LoginPollData = z.union([
  z.object({ status: z.literal('pending'), expires_at: z.string() }),
  z.object({ status: z.literal('expired') }),
  z.object({
    status: z.literal('complete'),
    token: z.string(),
    token_type: z.literal('Bearer'),
    expires_at: z.string(),
    user: z.object({ id: z.number().int(), email: z.string() }),
  }),
]);
export const LoginPollResponse = data(LoginPollData);

/** One program of GET /programs: with its advertiser (workspace) and the account's role there. */
export const ProgramItem = z.object({
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
export const ProgramsResponse = data(z.array(ProgramItem));

export const InitData = z.object({ program: Program.extend({ advertiser_id: z.number().int() }), next_steps: z.array(z.string()) });
export const InitResponse = data(InitData);

/** GET /status: the program's integration checklist, as the dashboard's status route answers it. */
export const StatusData = IntegrationStatus;
export const StatusResponse = data(StatusData);

const Fixtures = z.object({ partner_id: z.number().int(), aff_code: z.string(), affiliate_url: z.string(), created: z.boolean(), refreshed_at: z.string() });
export const TestEventData = z.union([
  z.object({ mode: z.literal('single'), test_mode: z.literal(true), event_type: z.enum(TEST_EVENT_TYPES), recorded: z.record(z.string(), z.unknown()) }),
  z.object({
    mode: z.literal('chain'),
    test_mode: z.literal(true),
    fixtures: Fixtures,
    steps: z.array(z.object({ step: z.enum(TEST_EVENT_TYPES), recorded: z.record(z.string(), z.unknown()) })),
    chains_left_this_hour: z.number().int(),
  }),
]);
export const TestEventResponse = data(TestEventData);

/** The error answers the CLI routes document; a retired program key answers 401 in the typed envelope (api_key_rotation_required). */
/** GET /programs/:programId/payouts (svc payouts, issue 34): the latest payouts and every partner's balances. */
export const PayoutsData = z.object({
  program_id: z.number().int(),
  payouts: z.array(
    z.object({
      id: z.string(),
      partner_id: z.number().int(),
      partner_name: z.string().nullable(),
      currency: z.string(),
      amount_minor: z.number().int(),
      status: z.enum(['pending', 'paid', 'canceled']),
      commissions: z.number().int(),
      created_at: z.string(),
      paid_at: z.string().nullable(),
      reference: z.string().nullable(),
    }),
  ),
  balances: z.array(
    z.object({
      partner_id: z.number().int(),
      partner_name: z.string().nullable(),
      currency: z.string(),
      pending: z.number().int(),
      held: z.number().int(),
      approved: z.number().int(),
      processing: z.number().int(),
      paid: z.number().int(),
      balance: z.number().int(),
    }),
  ),
});
export const PayoutsResponse = data(PayoutsData);

export const cliErrors = { 400: PlatformError, 401: z.union([PlatformError, TypedError]), 403: PlatformError, 404: PlatformError, 500: PlatformError, 429: TypedError };

export type ProgramItem = z.infer<typeof ProgramItem>;
