/**
 * The management API's request and response schemas (/api/tracking/: programs, partners and links,
 * sign-out). The routes validate, serialize and document with them; the CLI's init reuses the
 * program fields, so both answer a bad field in the same words.
 */
import { z } from 'zod';
import { COMMISSION_TYPES, type CommissionType } from '../../domain/tracking/commissions.js';
import { canonicalHostname, canonicalOrigin } from '../../domain/programs/origins.js';
import { isKnownCurrency } from '../../domain/fx/currencies.js';
import type { ProgramView } from '../../domain/programs/programs.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, body, echo, programIdParam, text } from '../http/schemas.js';
import { FraudRulesChange, FraudRulesView, fraudRulesView } from './fraud-rules.js';

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

/** recurring_months (issue 30): 1 to 120, or null for lifetime. */
export const recurringMonths = z
  .number({ error: M.terms.recurringMonths })
  .int(M.terms.recurringMonths)
  .min(1, M.terms.recurringMonths)
  .max(120, M.terms.recurringMonths)
  .nullable();

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
/** When a version of the terms takes effect (issue 30): an ISO 8601 instant with its offset. */
export const effectiveFrom = z
  .string({ error: M.terms.effectiveFrom })
  .refine((v) => ISO_INSTANT.test(v) && !Number.isNaN(Date.parse(v)), M.terms.effectiveFrom)
  .transform((v) => new Date(v));

/** recurring_months only with a recurring type (the type after the change). */
export function checkRecurringMonths(type: CommissionType, months: number | null | undefined) {
  if (months !== undefined && months !== null && type !== 'recurring_percent' && type !== 'recurring_fixed') throw badRequest(M.terms.recurringMonthsType);
}

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
  // Issue 31: which fraud rules hold a new commission for review (owners change them: they decide what gets paid).
  fraud_rules: FraudRulesChange.optional(),
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
  recurring_months: recurringMonths.optional(),
  workspace_id: z.number({ error: WORKSPACE }).int(WORKSPACE).positive(WORKSPACE).max(Number.MAX_SAFE_INTEGER, WORKSPACE).optional(),
  ...settings,
});

/** Issue 30: any current ISO 4217 code, in any letter case, kept upper case. */
const reportingCurrency = z.string({ error: M.management.reportingCurrency }).transform((value, ctx) => {
  const code = value.trim().toUpperCase();
  if (!isKnownCurrency(code)) ctx.addIssue({ code: 'custom', message: M.management.reportingCurrency });
  return code;
});

export const UpdateProgramRequest = body({
  reporting_currency: reportingCurrency.optional(),
  name: text(200, M.management.text('name', 200)).optional(),
  domain: programDomain.optional(),
  commission_type: commissionType.optional(),
  commission_rate: commissionRate.optional(),
  recurring_months: recurringMonths.optional(),
  effective_from: effectiveFrom.optional().describe('When changed terms take effect (default now); never in the past nor before the latest version'),
  ...settings,
  // Issue 31: the public application form and POST /api/v1/partners/apply.
  applications_open: z.boolean({ error: M.management.applicationsOpen }).optional(),
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
  recurring_months: z.number().int().nullable(),
  attribution_window_days: z.number().int(),
  lead_auth: z.enum(['server_required', 'browser_allowed']),
  paymentTrackingMode: z.enum(['processor_connect', 's2s']),
  allowed_origins: z.array(z.string()),
  reporting_currency: z.string().describe('ISO 4217: the currency of the converted totals (dashboard, agent, portal)'),
  api_token_masked: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  fraud_rules: FraudRulesView,
  applications_open: z.boolean().describe('Whether /apply/:programId and POST /api/v1/partners/apply take applications (default false)'),
});

/** A program as the wire shows it (Program): its times as ISO strings. */
export const programView = (p: ProgramView) => ({
  ...p,
  created_at: p.created_at.toISOString(),
  updated_at: p.updated_at.toISOString(),
  fraud_rules: fraudRulesView(p.fraud_rules),
});

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
