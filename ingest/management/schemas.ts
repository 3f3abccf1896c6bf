/**
 * The management API's request and response schemas (/api/tracking/: programs, partners and links,
 * sign-out). The routes validate, serialize and document with them; the CLI's init reuses the
 * program fields, so both answer a bad field in the same words.
 */
import { z } from 'zod';
import { COMMISSION_TYPES, type CommissionType } from '../../domain/tracking/commissions.js';
import { canonicalHostname, canonicalOrigin } from '../../domain/programs/origins.js';
import type { ProgramView } from '../../domain/programs/programs.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, body, echo, programIdParam, text } from '../http/schemas.js';

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

export const CreateProgramRequest = body({
  name: requiredText(200, 'name'),
  domain: programDomain,
  commission_type: commissionType,
  commission_rate: commissionRate,
  workspace_id: z.number({ error: WORKSPACE }).int(WORKSPACE).positive(WORKSPACE).max(Number.MAX_SAFE_INTEGER, WORKSPACE).optional(),
  ...settings,
});

export const UpdateProgramRequest = body({
  name: text(200, M.management.text('name', 200)).optional(),
  domain: programDomain.optional(),
  commission_type: commissionType.optional(),
  commission_rate: commissionRate.optional(),
  ...settings,
});

const AFF_CODE = M.management.affCode;
export const CreatePartnerRequest = body({
  name: text(200, M.management.partnerName),
  email: z.email({ error: M.management.email }).max(320).optional(),
  aff_code: z.string({ error: AFF_CODE }).regex(/^[A-Za-z0-9_-]{3,64}$/, AFF_CODE).optional(),
});

export const LinkParams = programIdParam.extend({ affCode: text(64, M.management.linkCode) });
export const LinkRequest = body({ enabled: z.boolean({ error: M.management.enabled }) });

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

/** A program as the wire shows it (Program): its times as ISO strings. */
export const programView = (p: ProgramView) => ({ ...p, created_at: p.created_at.toISOString(), updated_at: p.updated_at.toISOString() });

/** What a dashboard shows to pick a program. */
export const ProgramListItem = z.object({ id: z.number().int(), workspace_id: z.number().int(), name: z.string(), domain: z.string() });

export const ApiKeyIssued = z.object({ program_id: z.number().int(), api_key: z.string(), api_token_masked: z.string() });

export const PartnerCreated = z.object({
  partner_id: z.number().int(),
  partner_program_id: z.number().int(),
  aff_code: z.string(),
  status: z.string(),
  referral_url: z.string(),
});

export const LinkState = z.object({ aff_code: z.string(), enabled: z.boolean() });

export const SignedOut = z.object({ signed_out: z.literal(true) });

/** The success envelope of the management routes. */
export const data = <T extends z.ZodType>(shape: T) => z.object({ data: shape });

/** The error answers every management route documents. */
export const managementErrors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };

export type ProgramListItem = z.infer<typeof ProgramListItem>;
