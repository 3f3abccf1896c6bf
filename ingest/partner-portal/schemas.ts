/**
 * The partner program's request and response schemas (issue 31): the application (JSON and the
 * HTML form validate with the same fields), owners' decisions, portal links, and /api/partner/v1.
 */
import { z } from 'zod';
import { body, PlatformError, storable, text } from '../http/schemas.js';
import { PM } from './messages.js';

const A = PM.apply;

const email = (message: string) =>
  z
    .string({ error: message })
    .max(254, message)
    .pipe(z.email({ error: message }));

const website = z
  .string({ error: A.website })
  .max(500, A.website)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && storable(value);
    } catch {
      return false;
    }
  }, A.website);

/** The applicant's fields, shared by the JSON route and the HTML form. */
export const applicationFields = {
  name: z.string({ error: A.name }).trim().pipe(text(200, A.name)),
  email: email(A.email),
  website: website.optional(),
  message: z.string({ error: A.message }).max(2000, A.message).refine(storable, A.message).optional(),
};

const PROGRAM_ID = A.programId;
export const ApplyRequest = body({
  program_id: z.number({ error: PROGRAM_ID }).int(PROGRAM_ID).positive(PROGRAM_ID).max(Number.MAX_SAFE_INTEGER, PROGRAM_ID),
  ...applicationFields,
});

/** The HTML form's fields: strings, an empty optional field as absent. */
export const ApplicationForm = z.object({
  ...applicationFields,
  website: z.preprocess((v) => (v === '' ? undefined : v), applicationFields.website),
  message: z.preprocess((v) => (v === '' ? undefined : v), applicationFields.message),
});

export const Applied = z.object({ partner_id: z.number().int(), program_id: z.number().int(), status: z.literal('pending') });

export const PartnerDecided = z.object({
  partner_id: z.number().int(),
  partner_program_id: z.number().int(),
  program_id: z.number().int(),
  status: z.enum(['pending', 'approved', 'rejected', 'banned', 'removed']),
  changed: z.boolean(),
  link_created: z.string().nullable(),
  links_disabled: z.number().int(),
  commissions_held: z.number().int(),
  sessions_revoked: z.number().int(),
});

export const ApplicationsQuery = z.object({
  status: z.enum(['pending', 'approved', 'rejected', 'banned', 'removed'], { error: PM.apply.status }).optional(),
  limit: z
    .string({ error: PM.portal.limit })
    .regex(/^[1-9][0-9]{0,2}$/, PM.portal.limit)
    .transform(Number)
    .refine((n) => n <= 100, PM.portal.limit)
    .optional(),
});
export const ApplicationView = z.object({
  partner_program_id: z.number().int(),
  partner_id: z.number().int(),
  name: z.string(),
  email: z.string(),
  website: z.string().nullable(),
  message: z.string().nullable(),
  status: z.string().describe('The partner-program record now: pending until an owner decides'),
  created_at: z.string(),
});

export const PortalLinkCreated = z.object({
  partner_id: z.number().int(),
  program_id: z.number().int(),
  url: z.string().describe('The one-time sign-in link: shown once, valid 24 hours, used once'),
  expires_at: z.string(),
});

// ---- /api/partner/v1

const P = PM.portal;
const positiveId = (message: string) =>
  z
    .string({ error: message })
    .regex(/^[1-9][0-9]{0,14}$/, message)
    .transform(Number);

export const PortalProgramParam = z.object({ programId: positiveId(P.programId) });
export const PortalPeriodParam = z.object({ period: z.string({ error: P.period }).regex(/^\d{4}-(0[1-9]|1[0-2])$/, P.period) });

const sub = (n: number) => z.string({ error: P.sub(n) }).max(100, P.sub(n)).refine(storable, P.sub(n)).optional();
export const LinksQuery = z.object({
  program_id: positiveId(P.programId).optional(),
  landing_url: z.string({ error: P.landingUrl }).max(2000, P.landingUrl).optional(),
  sub1: sub(1),
  sub2: sub(2),
  sub3: sub(3),
  sub4: sub(4),
  sub5: sub(5),
});

export const ListQuery = z.object({
  program_id: positiveId(P.programId).optional(),
  limit: z
    .string({ error: P.limit })
    .regex(/^[1-9][0-9]{0,2}$/, P.limit)
    .transform(Number)
    .refine((n) => n <= 100, P.limit)
    .optional(),
});

export const PayoutMethodRequest = z.discriminatedUnion(
  'method',
  [
    body({ method: z.literal('paypal'), email: email(P.payoutEmail) }),
    body({
      method: z.literal('wise'),
      email: email(P.payoutEmail),
      name: text(200, P.wiseName),
      receiver_type: z.enum(['PERSON', 'INSTITUTION'], { error: P.receiverType }).default('PERSON'),
    }),
    body({ method: z.literal('manual'), note: z.string({ error: P.note }).max(500, P.note).refine(storable, P.note).nullable().default(null) }),
  ],
  { error: P.method },
);

const time = z.string();
const methodView = z.union([
  z.object({ method: z.literal('paypal'), email: z.string() }),
  z.object({ method: z.literal('wise'), email: z.string(), name: z.string(), receiver_type: z.enum(['PERSON', 'INSTITUTION']) }),
  z.object({ method: z.literal('manual'), note: z.string().nullable() }),
]);
export const Me = z.object({ partner_id: z.number().int(), name: z.string(), email: z.string().nullable(), created_at: time, payout_method: methodView.nullable() });
export const PortalProgramView = z.object({ program_id: z.number().int(), name: z.string(), domain: z.string(), status: z.string(), joined_at: time });
export const PortalLinkView = z.object({ program_id: z.number().int(), aff_code: z.string(), enabled: z.boolean(), referral_url: z.string(), created_at: time });
export const PortalCommissionView = z.object({
  commission_id: z.string(),
  program_id: z.number().int(),
  sale_id: z.string(),
  amount_minor: z.number().int(),
  currency: z.string(),
  status: z.string(),
  customer: z.string().nullable().describe("The customer's key, masked: its first two characters"),
  created_at: time,
  available_at: time,
  paid_at: time.nullable(),
});
const amount = z.number().int();
export const PortalBalanceView = z.object({
  program_id: z.number().int(),
  balances: z.array(z.object({ currency: z.string(), pending: amount, held: amount, approved: amount, processing: amount, paid: amount, balance: amount })),
});
export const PortalPayoutView = z.object({
  payout_id: z.string(),
  program_id: z.number().int(),
  currency: z.string(),
  amount_minor: amount,
  status: z.string(),
  reference: z.string().nullable(),
  created_at: time,
  paid_at: time.nullable(),
});
export const PortalStatementView = z.object({
  program_id: z.number().int(),
  period: z.string(),
  from: time,
  to: time,
  lines: z.array(
    z.object({
      partner_id: z.number().int(), currency: z.string(), opening: amount, commissions: amount, adjustments: amount, reversals: amount,
      clawbacks: amount, manual: amount, payouts: amount, closing: amount,
    }),
  ),
});
export const PayoutMethodView = methodView;
export const SignedOut = z.object({ signed_out: z.literal(true) });

export const data = <T extends z.ZodType>(shape: T) => z.object({ data: shape });
export const partnerErrors = { 400: PlatformError, 401: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };
