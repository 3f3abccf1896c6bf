/**
 * The money surface's request and response schemas (issue 34; partner-program.md, "Commission
 * lifecycle", "Ledger", "Payouts", "Statements and reconciliation"): commissions approve/reject,
 * a partner's ledger, balance, adjustments and payout method, payouts and their exports,
 * statements, and the program's payout settings. Amounts are integer minor units with their
 * currency; times ISO 8601 UTC.
 */
import { z } from 'zod';
import { CURRENCIES } from '../../domain/payments/providers.js';
import { listCursor } from '../agent/cursor.js';
import { M } from '../http/messages.js';
import { PlatformError, body, programIdParam, storable, text } from '../http/schemas.js';

const $ = M.money;
const DIGITS = /^[1-9][0-9]{0,14}$/;
const MAX_AMOUNT = 100_000_000_000;

export const unknownQuery = { error: (issue: { code?: string; keys?: string[] }) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys ?? []) : M.dashboard.badQuery) };

// Path parameters. A commission or payout id that is not a uuid is answered like an unknown one (404), by the domain.
export const CommissionParams = programIdParam.extend({ commissionId: z.string({ error: $.commissionId }).min(1, $.commissionId).max(64, $.commissionId) });
export const PartnerParams = programIdParam.extend({ partnerId: z.string({ error: $.partnerId }).regex(DIGITS, $.partnerId).transform(Number) });
export const payoutId = z.string({ error: $.payoutId }).min(1, $.payoutId).max(64, $.payoutId);
export const period = z.string({ error: $.period }).regex(/^\d{4}-(0[1-9]|1[0-2])$/, $.period);
export const PayoutParams = programIdParam.extend({ payoutId });
export const PeriodParams = programIdParam.extend({ period });

// Bodies.
export const DecisionRequest = body({ reason: text(500, $.reason).describe('Why: 1 to 500 characters, kept with the commission') });

export const AdjustmentRequest = body({
  amount_minor: z
    .number({ error: $.amount })
    .int($.amount)
    .min(-MAX_AMOUNT, $.amount)
    .max(MAX_AMOUNT, $.amount)
    .refine((v) => v !== 0, $.amount)
    .describe('Signed minor units: positive adds to the balance, negative takes off'),
  currency: z.enum(CURRENCIES, { error: $.currency(CURRENCIES) }).describe('A currency the partner already has ledger entries in'),
  reason: text(500, $.reason),
});

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
export const CreatePayoutsRequest = body({
  cutoff: z
    .string({ error: $.cutoff })
    .refine((v) => ISO_INSTANT.test(v) && !Number.isNaN(Date.parse(v)), $.cutoff)
    .transform((v) => new Date(v))
    .optional()
    .describe('Covers what was approved by then (default: now); never in the future'),
});

export const MarkPaidRequest = body({ reference: text(200, $.reference).describe("The payment's reference at the provider (batch or transfer id)") });
export const EmptyRequest = body({});

export const SettingsRequest = body({
  commission_hold_days: z.number({ error: $.holdDays }).int($.holdDays).min(0, $.holdDays).max(365, $.holdDays).optional(),
  payout_minimum_minor: z.number({ error: $.payoutMinimum }).int($.payoutMinimum).min(1, $.payoutMinimum).max(MAX_AMOUNT, $.payoutMinimum).optional(),
}).refine((b) => b.commission_hold_days !== undefined || b.payout_minimum_minor !== undefined, $.settingsEmpty);

const email = z.email({ error: $.methodEmail }).max(320, $.methodEmail).refine(storable, $.methodEmail);
export const PayoutMethodRequest = body({
  method: z.enum(['paypal', 'wise', 'manual'], { error: $.method }),
  email: email.optional().describe('paypal, wise: the account email'),
  name: text(200, $.methodName).optional().describe("wise: the account holder's name"),
  receiver_type: z.enum(['PERSON', 'INSTITUTION'], { error: $.receiverType }).optional().describe('wise: PERSON (default) or INSTITUTION'),
  note: text(500, $.methodNote).optional().describe('manual: how the brand pays this partner'),
}).superRefine((b, ctx) => {
  if ((b.method === 'paypal' || b.method === 'wise') && b.email === undefined) ctx.addIssue({ code: 'custom', message: $.methodEmail, path: ['email'] });
  if (b.method === 'wise' && b.name === undefined) ctx.addIssue({ code: 'custom', message: $.methodName, path: ['name'] });
});

// Queries.
export const limit = z
  .union([z.number({ error: $.limit }).int($.limit).min(1, $.limit).max(100, $.limit), z.string({ error: $.limit }).regex(/^(100|[1-9][0-9]?)$/, $.limit).transform(Number)], { error: $.limit })
  .optional()
  .describe('Items per page, 1 to 100 (default 50)');

export const LedgerCursor = listCursor('ledger', 'postgres', 'bigint');
export const PayoutsCursor = listCursor('payouts', 'postgres', 'uuid');

export const LedgerQuery = z.strictObject({ limit, cursor: LedgerCursor.schema }, unknownQuery);

export const PAYOUT_STATUSES = ['pending', 'paid', 'canceled'] as const;
export const PayoutsQuery = z.strictObject(
  {
    status: z.enum(PAYOUT_STATUSES, { error: $.status(PAYOUT_STATUSES) }).optional(),
    partner_id: z.string({ error: $.partnerId }).regex(DIGITS, $.partnerId).transform(Number).optional(),
    limit,
    cursor: PayoutsCursor.schema,
  },
  unknownQuery,
);

export const ExportQuery = z.strictObject(
  {
    status: z.enum(PAYOUT_STATUSES, { error: $.status(PAYOUT_STATUSES) }).default('pending'),
    format: z.enum(['csv', 'paypal', 'wise'], { error: $.format }).default('csv'),
    currency: z.enum(CURRENCIES, { error: $.currency(CURRENCIES) }).optional(),
  },
  unknownQuery,
);

// Responses.
const time = z.string().describe('ISO 8601, UTC');
const STATUSES = ['pending', 'held', 'approved', 'processing', 'paid', 'reversed'] as const;

export const Commission = z.object({
  id: z.string(),
  sale_id: z.string(),
  partner_id: z.number().int(),
  amount_minor: z.number().int(),
  currency: z.string(),
  status: z.enum(STATUSES).describe('As every read shows it: pending past its hold end reads approved'),
  created_at: time,
  available_at: time.describe('When the hold ends: creation + commission_hold_days'),
  approved_at: time.nullable(),
  paid_at: time.nullable(),
  reversed_at: time.nullable(),
  payout_id: z.string().nullable(),
  status_reason: z.string().nullable(),
  rule_version: z.number().int().nullable().describe('The commission rule version that computed it (GET .../commission-rules)'),
});

/** The lists the console shows name each commission's or payout's partner. */
const partnerName = z.string().nullable().describe("The partner's name (null when the partner no longer exists)");

/** A commission of GET .../commissions: with its partner's name. */
export const ListedCommission = Commission.extend({ partner_name: partnerName });

export const LedgerEntry = z.object({
  id: z.number().int(),
  kind: z.enum(['commission', 'adjustment', 'reversal', 'clawback', 'payout', 'manual']),
  amount_minor: z.number().int(),
  currency: z.string(),
  commission_id: z.string().nullable(),
  sale_id: z.string().nullable(),
  payout_id: z.string().nullable(),
  cause: z.string(),
  rule_version: z.number().int().nullable(),
  reason: z.string().nullable(),
  created_at: time,
  available_at: time,
});

export const Balance = z.object({
  currency: z.string(),
  pending: z.number().int(),
  held: z.number().int(),
  approved: z.number().int().describe('Available to pay: approved commissions plus outstanding clawback and manual entries'),
  processing: z.number().int(),
  paid: z.number().int(),
  balance: z.number().int().describe('The sum of the ledger entries: pending + held + approved + processing'),
});

export const Payout = z.object({
  id: z.string(),
  partner_id: z.number().int(),
  currency: z.string(),
  amount_minor: z.number().int(),
  status: z.enum(PAYOUT_STATUSES),
  cutoff: time,
  commission_ids: z.array(z.string()),
  clawback_entry_ids: z.array(z.number().int()),
  manual_entry_ids: z.array(z.number().int()),
  created_at: time,
  paid_at: time.nullable(),
  canceled_at: time.nullable(),
  reference: z.string().nullable(),
});

/** A payout of GET .../payouts: with its partner's name. */
export const ListedPayout = Payout.extend({ partner_name: partnerName });

/** replayed: the Idempotency-Key named an earlier identical request, whose entry this is; nothing new was written. */
export const AdjustmentOk = z.object({ data: LedgerEntry, replayed: z.boolean() });

export const PayoutRun = z.object({ run_id: z.string(), replayed: z.boolean(), payouts: z.array(Payout) });

export const PayoutMethod = z.object({
  method: z.enum(['paypal', 'wise', 'manual']),
  email: z.string().optional(),
  name: z.string().optional(),
  receiver_type: z.enum(['PERSON', 'INSTITUTION']).optional(),
  note: z.string().nullable().optional(),
});

export const Settings = z.object({ commission_hold_days: z.number().int(), payout_minimum_minor: z.number().int() });

const amount = z.number().int();
export const Statement = z.object({
  program_id: z.number().int(),
  period: z.string(),
  from: time,
  to: time,
  partners: z.array(
    z.object({
      partner_id: z.number().int(),
      currency: z.string(),
      opening: amount,
      commissions: amount,
      adjustments: amount,
      reversals: amount,
      clawbacks: amount,
      manual: amount,
      payouts: amount,
      closing: amount,
    }),
  ),
  totals: z.array(z.object({ currency: z.string(), gross_sales: amount, refunds: amount, net_sales: amount, net_commissions: amount })),
  digest: z.string().describe("SHA-256 (hex) of the statement's canonical JSON (RFC 8785) without the digest"),
});

/** GET .../statements/:period: the statement, and the names of its partners beside it (not part of the statement nor of its digest). */
export const StatementOk = z.object({
  data: Statement,
  meta: z.object({ partners: z.array(z.object({ partner_id: z.number().int(), partner_name: partnerName })).describe("The name of each line's partner, for people") }),
});

export const data = <T extends z.ZodType>(shape: T) => z.object({ data: shape });
export const page = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });

export const moneyErrors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError };

// Fraud review (issue 31, point 5): GET .../reviews, the program's held commissions.
export const ReviewsCursor = listCursor('reviews', 'postgres', 'uuid');
export const ReviewsQuery = z.strictObject(
  {
    partner_id: z.string({ error: $.partnerId }).regex(DIGITS, $.partnerId).transform(Number).optional().describe("Only this partner's held commissions"),
    limit,
    cursor: ReviewsCursor.schema,
  },
  unknownQuery,
);

export const Review = Commission.extend({
  partner_name: partnerName,
  held_at: time.describe('When it was held'),
  reasons: z
    .array(
      z
        .object({ reason: z.string().describe('self_referral, click_flood, fast_conversion, partner_ip, or the cause given (partner_banned)') })
        .catchall(z.unknown())
        .describe('The evidence beside it: email and email_of (self_referral), client_ip, clicks and link_id (click_flood), seconds (fast_conversion), client_ip and sign_in_address (partner_ip), click_id'),
    )
    .describe('What held it'),
  sale: z.object({ transaction_id: z.string(), amount_minor: z.number().int(), currency: z.string(), occurred_at: time }),
});
