import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { sql, type Database } from '../../core/db.js';
import { issueProgramKey } from '../../domain/programs/api-keys.js';
import { COMMISSION_TYPES, type CommissionType } from '../../domain/tracking/commissions.js';
import { canonicalHostname, canonicalOrigin } from '../../domain/programs/origins.js';
import { createPartner, createProgram, getProgram, referralUrl, setLinkEnabled, updateProgram, type ProgramView } from '../../domain/programs/programs.js';
import { revokeSession, workspacesOf } from '../../domain/access/workspaces.js';
import { createAuth, parseSessionHeader } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, body, echo, programIdParam, text } from '../http/schemas.js';

export interface ManagementDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
}

const { missingFields: MISSING, commissionRate: RATE, attributionWindow: WINDOW, workspaceId: WORKSPACE, allowedOrigins: ORIGINS } = M.management;

/** A percent rate is a percentage of the sale: at most 100 (the create, init and update routes). */
export function checkCommissionRate(type: CommissionType, rate: number) {
  if ((type === 'percent' || type === 'recurring_percent') && rate > 100) throw badRequest(M.management.percentRateMax);
}

export const commissionType = z.enum(COMMISSION_TYPES as ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'], {
  error: (issue) => (issue.input === undefined ? MISSING : M.management.commissionType(echo(issue.input, 40), COMMISSION_TYPES)),
});
export const commissionRate = z
  .number({ error: (issue) => (issue.input === undefined ? MISSING : RATE) })
  .min(0.0001, RATE) // stored with 4 decimals: anything smaller would round to 0
  .max(1_000_000, M.management.commissionRateMax);

const settings = {
  attribution_window_days: z.number({ error: WINDOW }).int(WINDOW).min(1, WINDOW).max(3650, WINDOW).optional(),
  lead_auth: z.enum(['server_required', 'browser_allowed'], { error: M.management.leadAuth }).optional(),
  paymentTrackingMode: z.enum(['processor_connect', 's2s'], { error: M.management.paymentTrackingMode }).optional(),
  allowed_origins: z
    .array(
      z.string({ error: ORIGINS }).transform((value, ctx) => {
        const origin = canonicalOrigin(value);
        if (!origin) ctx.addIssue({ code: 'custom', message: ORIGINS });
        return origin ?? z.NEVER;
      }),
      { error: ORIGINS },
    )
    .max(50, ORIGINS)
    .optional(),
};

export const requiredText = (max: number, name: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? MISSING : M.management.text(name, max)) })
    .pipe(text(max, M.management.text(name, max)));

/** A program's domain: a host name, kept in its canonical form (the referral links are built on it). */
export const programDomain = z
  .string({ error: (issue) => (issue.input === undefined ? MISSING : M.management.domain) })
  .transform((value, ctx) => {
    const host = canonicalHostname(value);
    if (!host) ctx.addIssue({ code: 'custom', message: M.management.domain });
    return host ?? z.NEVER;
  });

const CreateProgramBody = body({
  name: requiredText(200, 'name'),
  domain: programDomain,
  commission_type: commissionType,
  commission_rate: commissionRate,
  workspace_id: z.number({ error: WORKSPACE }).int(WORKSPACE).positive(WORKSPACE).max(Number.MAX_SAFE_INTEGER, WORKSPACE).optional(),
  ...settings,
});

const UpdateProgramBody = body({
  name: text(200, M.management.text('name', 200)).optional(),
  domain: programDomain.optional(),
  commission_type: commissionType.optional(),
  commission_rate: commissionRate.optional(),
  ...settings,
});

const AFF_CODE = M.management.affCode;
const CreatePartnerBody = body({
  name: text(200, M.management.partnerName),
  email: z.email({ error: M.management.email }).max(320).optional(),
  aff_code: z.string({ error: AFF_CODE }).regex(/^[A-Za-z0-9_-]{3,64}$/, AFF_CODE).optional(),
});

const LinkParams = programIdParam.extend({ affCode: text(64, M.management.linkCode) });
const LinkBody = body({ enabled: z.boolean({ error: M.management.enabled }) });

export const Program = z.object({
  id: z.number().int(),
  workspace_id: z.number().int(),
  name: z.string(),
  domain: z.string(),
  commission_type: z.enum(['percent', 'fixed', 'recurring_percent', 'recurring_fixed']),
  commission_rate: z.number(),
  attribution_window_days: z.number().int(),
  lead_auth: z.enum(['server_required', 'browser_allowed']),
  paymentTrackingMode: z.enum(['processor_connect', 's2s']),
  allowed_origins: z.array(z.string()),
  api_token_masked: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const programView = (p: ProgramView) => ({ ...p, created_at: p.created_at.toISOString(), updated_at: p.updated_at.toISOString() });

/** What a dashboard shows to pick a program: every program of every workspace the user belongs to. */
const programsOfUser = sql(
  'programs.list_for_user',
  `SELECT p.id, p.workspace_id, p.name, p.domain FROM programs p JOIN members m ON m.workspace_id = p.workspace_id
    WHERE m.user_id = $1 ORDER BY p.workspace_id, p.id`,
);
const ProgramListItem = z.object({ id: z.number().int(), workspace_id: z.number().int(), name: z.string(), domain: z.string() });

const errors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };

export const managementRoutes: FastifyPluginAsync<ManagementDeps> = async (fastify, { db, authThrottle }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  // Who may do what, and the 401/403 of each refusal: the 'management' row of the requirement table.
  const auth = createAuth({ db, throttle: authThrottle });
  const session = auth.require('management');
  const programWrite = auth.require('management', 'program:write');
  const keyManage = auth.require('management', 'api_key:manage');
  /** The management family's credential is a dashboard session, so its principal is a user. */
  const userOf = (request: FastifyRequest) => {
    if (request.principal?.kind !== 'session') throw new Error('management routes run with a dashboard session');
    return request.principal.userId;
  };

  const config = { surface: 'management' as const };

  app.post(
    '/programs',
    {
      config,
      ...session,
      schema: { summary: 'Create a program (its API key is created with it)', body: CreateProgramBody, response: { 200: z.object({ data: Program }), ...errors } },
    },
    async (request) => {
      const b = request.body;
      let workspaceId = b.workspace_id;
      if (workspaceId === undefined) {
        const memberships = await workspacesOf(db, userOf(request));
        if (memberships.length !== 1) throw badRequest(M.management.workspaceRequired);
        workspaceId = memberships[0]!.workspaceId;
      }
      await auth.checkWorkspace(request, 'management', 'program:write', workspaceId);
      checkCommissionRate(b.commission_type, b.commission_rate);
      const program = await createProgram(db, workspaceId, {
        name: b.name,
        domain: b.domain,
        commission_type: b.commission_type,
        commission_rate: b.commission_rate,
        attribution_window_days: b.attribution_window_days ?? 60,
        lead_auth: b.lead_auth ?? 'server_required',
        paymentTrackingMode: b.paymentTrackingMode ?? 'processor_connect',
        allowed_origins: b.allowed_origins ?? [],
      });
      return { data: programView(program) };
    },
  );

  app.get(
    '/programs',
    {
      config,
      ...session,
      schema: { summary: "List the programs of the session's workspaces", response: { 200: z.object({ data: z.array(ProgramListItem) }), ...errors } },
    },
    // The list is the user's memberships: it needs no check beyond the session.
    async (request) => ({
      data: await db.many<z.infer<typeof ProgramListItem>>(programsOfUser, [userOf(request)]),
    }),
  );

  // Sign-out: the presented session is deleted, so it stops working at once on every process.
  app.delete(
    '/session',
    {
      config,
      ...session,
      schema: {
        summary: 'Sign out: revoke the dashboard session that makes this request',
        response: { 200: z.object({ data: z.object({ signed_out: z.literal(true) }) }), ...errors },
      },
    },
    async (request) => {
      const presented = parseSessionHeader(request.headers.authorization);
      if (presented.kind === 'token') await revokeSession(db, presented.token);
      return { data: { signed_out: true as const } };
    },
  );

  app.patch(
    '/programs/:programId',
    {
      config,
      ...programWrite,
      schema: { summary: 'Change program settings', params: programIdParam, body: UpdateProgramBody, response: { 200: z.object({ data: Program }), ...errors } },
    },
    async (request) => {
      const { programId } = request.params;
      const current = (await getProgram(db, programId))!;
      checkCommissionRate(request.body.commission_type ?? current.commission_type, request.body.commission_rate ?? current.commission_rate);
      return { data: programView(await updateProgram(db, programId, request.body)) };
    },
  );

  app.post(
    '/programs/:programId/api-key',
    {
      config,
      ...keyManage,
      schema: {
        summary: 'Generate or regenerate the program API key (owners only; the full key is shown once)',
        params: programIdParam,
        response: { 200: z.object({ data: z.object({ program_id: z.number().int(), api_key: z.string(), api_token_masked: z.string() }) }), ...errors },
      },
    },
    async (request) => {
      const { apiKey, masked } = await issueProgramKey(db, request.params.programId);
      return { data: { program_id: request.params.programId, api_key: apiKey, api_token_masked: masked } };
    },
  );

  app.post(
    '/programs/:programId/partners',
    {
      config,
      ...programWrite,
      schema: {
        summary: 'Create a partner with an approved partner-program record and a referral link',
        params: programIdParam,
        body: CreatePartnerBody,
        response: {
          200: z.object({
            data: z.object({ partner_id: z.number().int(), partner_program_id: z.number().int(), aff_code: z.string(), status: z.string(), referral_url: z.string() }),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const program = (await getProgram(db, request.params.programId))!;
      const partner = await createPartner(db, program.id, {
        name: request.body.name,
        email: request.body.email,
        affCode: request.body.aff_code,
      });
      return {
        data: {
          partner_id: partner.partnerId,
          partner_program_id: partner.partnerProgramId,
          aff_code: partner.affCode,
          status: partner.status,
          referral_url: referralUrl(program.domain, partner.affCode),
        },
      };
    },
  );

  app.patch(
    '/programs/:programId/links/:affCode',
    {
      config,
      ...programWrite,
      schema: {
        summary: 'Turn a referral link off or on',
        params: LinkParams,
        body: LinkBody,
        response: { 200: z.object({ data: z.object({ aff_code: z.string(), enabled: z.boolean() }) }), ...errors },
      },
    },
    async (request) => {
      const link = await setLinkEnabled(db, request.params.programId, request.params.affCode, request.body.enabled);
      return { data: { aff_code: link.aff_code, enabled: link.enabled } };
    },
  );
};
