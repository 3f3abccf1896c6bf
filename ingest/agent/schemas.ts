/**
 * The agent API's zod schemas (issue 13): the HTTP routes validate, serialize and document with
 * them, and the MCP tools take their input schemas from them, so the two cannot drift.
 */
import { z } from 'zod';
import { M } from '../http/messages.js';
import { body, text } from '../http/schemas.js';
import { PerformanceOk, ReportingTotals } from '../dashboard/schemas.js';
import { listCursor, type ListCursor } from './cursor.js';

export type { Cursor, ListCursor } from './cursor.js';

const A = M.agent;
const DIGITS = /^[1-9][0-9]{0,14}$/;

/**
 * A positive integer: a number (MCP arguments, JSON bodies) or its digits (path and query strings),
 * the same value either way.
 */
export const positiveId = (message: string) =>
  z.union(
    [z.number({ error: message }).int(message).positive(message).max(Number.MAX_SAFE_INTEGER, message), z.string({ error: message }).regex(DIGITS, message).transform(Number)],
    { error: message },
  );

export const ProgramParams = z.object({ programId: positiveId(M.body.programIdParam).describe('The program id') });

export const LinkParams = ProgramParams.extend({
  affCode: text(64, M.management.linkCode).describe('The referral link code (the aff parameter)'),
});

/** ISO 8601 with an offset (or a date, which is its UTC midnight). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;
const instant = (name: 'from' | 'to') =>
  z
    .string({ error: A.time(name) })
    .refine((v) => ISO_INSTANT.test(v) && !Number.isNaN(Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v)), A.time(name))
    .transform((v) => new Date(v.length === 10 ? `${v}T00:00:00Z` : v).toISOString())
    .optional();

const timeRange = {
  from: instant('from').describe('Start of the range, inclusive: ISO 8601 date-time with offset, or a date (UTC midnight)'),
  to: instant('to').describe('End of the range, exclusive'),
};

const unknownQuery = { error: (issue: { code?: string; keys?: string[] }) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys ?? []) : M.dashboard.badQuery) };

const rangeInOrder = (q: { from?: string; to?: string }, ctx: z.RefinementCtx) => {
  if (q.from && q.to && q.from >= q.to) ctx.addIssue({ code: 'custom', message: A.timeOrder });
};

/** 1 to 100, as a number or its digits; every way of getting it wrong has the one message. */
function pageSize() {
  const m = A.limit;
  return z.union([z.number({ error: m }).int(m).min(1, m).max(100, m), z.string({ error: m }).regex(/^(100|[1-9][0-9]?)$/, m).transform(Number)], { error: m });
}

const limitParam = pageSize()
  .optional()
  .describe('Items per page, 1 to 100 (default 50)');

/** A cursor-paginated list's query: time range, partner, status, page (the list's own cursor). */
export const listQuery = <const S extends readonly [string, ...string[]]>(cursor: ListCursor, statuses: S, statusHelp: string) =>
  z
    .strictObject(
      {
        ...timeRange,
        partner_id: positiveId(A.partnerId).optional().describe('Only this partner'),
        status: z.enum(statuses, { error: A.status(statuses) }).optional().describe(statusHelp),
        limit: limitParam,
        cursor: cursor.schema,
      },
      unknownQuery,
    )
    .superRefine(rangeInOrder);

// Each list's cursor: sales and commissions have uuid ids, partner-program records bigserial ones,
// both positioned by Postgres' time text; clicks are read from the warehouse, with text ids.
export const SalesCursor = listCursor('sales', 'postgres', 'uuid');
export const CommissionsCursor = listCursor('commissions', 'postgres', 'uuid');
export const PartnersCursor = listCursor('partners', 'postgres', 'bigint');
export const ClicksCursor = listCursor('clicks', 'warehouse', 'text');

export const SalesQuery = listQuery(SalesCursor, ['paid', 'refunded', 'chargeback'], 'Only sales in this state; the range applies to the time of payment (occurred_at)');
export const CommissionsQuery = listQuery(
  CommissionsCursor,
  ['pending', 'held', 'approved', 'processing', 'paid', 'reversed'],
  'Only commissions in this state (as reads show it: pending past its hold end is approved); the range applies to their creation',
);
export const PartnersQuery = listQuery(PartnersCursor, ['pending', 'approved', 'rejected', 'banned', 'removed'], 'Only partner-program records in this state');
export const ClicksQuery = listQuery(ClicksCursor, ['real', 'test'], 'real or test clicks only');

export const RangeQuery = z.strictObject(timeRange, unknownQuery).superRefine(rangeInOrder);

export const TopPartnersQuery = z
  .strictObject(
    {
      ...timeRange,
      limit: pageSize()
        .optional()
        .describe('How many partner and currency rows, 1 to 100 (default 10)'),
    },
    unknownQuery,
  )
  .superRefine(rangeInOrder);

export const EmptyQuery = z.strictObject({}, unknownQuery);

export const CreatePartnerBody = body({
  name: text(200, M.management.partnerName).describe('The partner name'),
  email: z.email({ error: M.management.email }).max(320).optional().describe('The partner email'),
  aff_code: z
    .string({ error: A.affCodeRequired })
    .regex(/^[A-Za-z0-9_-]{3,64}$/, A.affCodeRequired)
    .describe('The referral link code: also the idempotency key (the same code, name and email again answers the partner it created)'),
});

export const SetLinkBody = body({ enabled: z.boolean({ error: M.management.enabled }).describe('true turns the link on, false off') });

export const TestEventBody = body({
  event_type: z
    .string({ error: (issue) => A.eventType(String(issue.input ?? '')) })
    .refine((v) => v === 'click' || v === 'lead' || v === 'sale', { error: (issue) => A.eventType(String(issue.input).slice(0, 32)) })
    .transform((v) => v as 'click' | 'lead' | 'sale')
    .describe('click, lead or sale'),
  reference: z
    .string({ error: A.reference })
    .regex(/^[A-Za-z0-9._-]{1,64}$/, A.reference)
    .describe('Chosen by the caller; the idempotency key of the run within the program'),
});

// Responses.

const Page = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    has_more: z.boolean(),
    next_cursor: z.string().nullable().describe('Pass as cursor to read the next page; null on the last page'),
  });

export const AgentProgram = z.object({
  id: z.number().int(),
  workspace_id: z.number().int(),
  name: z.string(),
  domain: z.string(),
  commission_type: z.string(),
  commission_rate: z.number(),
  recurring_months: z.number().int().nullable().describe('Months after the first purchase that recurring commissions are paid; null: lifetime (issue 30)'),
  attribution_window_days: z.number().int(),
  lead_auth: z.string(),
  paymentTrackingMode: z.string(),
  allowed_origins: z.array(z.string()),
  reporting_currency: z.string().describe('ISO 4217: the currency of the converted totals (issue 30)'),
  applications_open: z.boolean().describe('Whether the public application form takes applications (issue 31)'),
  fraud_rules: z.record(z.string(), z.boolean()).describe('Each fraud rule on or off: self_referral, click_flood, fast_conversion, partner_ip (issue 31)'),
  api_token_masked: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const ProgramOk = z.object({ data: AgentProgram });

export const ProgramListOk = z.object({
  data: z.array(z.object({ id: z.number().int(), name: z.string(), domain: z.string(), created_at: z.string() })),
});

export const SalesOk = Page(
  z.object({
    sale_id: z.string(),
    transaction_id: z.string(),
    customer_id: z.number().int().nullable(),
    partner_id: z.number().int().nullable(),
    amount_cents: z.number().int(),
    currency: z.string(),
    status: z.string(),
    test: z.boolean(),
    occurred_at: z.string(),
    created_at: z.string(),
    commission_skipped_reason: z.string().nullable().describe("Why the sale earned no commission its terms would otherwise pay: 'recurring_limit_reached'"),
  }),
);

export const CommissionsOk = Page(
  z.object({
    commission_id: z.string(),
    sale_id: z.string(),
    partner_id: z.number().int(),
    customer_id: z.number().int().nullable(),
    commission_type: z.string(),
    commission_rate: z.number(),
    amount_cents: z.number().int(),
    currency: z.string(),
    status: z.string(),
    created_at: z.string(),
    reversed_at: z.string().nullable(),
    rule_version: z.number().int().nullable().describe('The commission rule version that computed it'),
  }),
);

export const PartnersOk = Page(
  z.object({
    partner_program_id: z.number().int(),
    partner_id: z.number().int().nullable(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    status: z.string(),
    created_at: z.string(),
    links: z.array(z.object({ aff_code: z.string(), enabled: z.boolean() })),
  }),
);

export const ClicksOk = Page(
  z.object({
    click_id: z.string(),
    partner_id: z.number().int().nullable(),
    referral_link_id: z.number().int(),
    test: z.boolean(),
    created_at: z.string(),
  }),
);

const Money = { created_cents: z.number().int(), reversed_cents: z.number().int(), net_cents: z.number().int() };

export const ReconciliationOk = z.object({
  data: z.object({
    from: z.string().nullable(),
    to: z.string().nullable(),
    lines: z.array(
      z.object({ partner_id: z.number().int(), currency: z.string(), created_count: z.number().int(), reversed_count: z.number().int(), ...Money }),
    ),
    totals: z.array(z.object({ currency: z.string(), ...Money })),
  }),
});

export const TopPartnersOk = z.object({
  data: z.array(
    z.object({
      partner_id: z.number().int(),
      name: z.string().nullable(),
      currency: z.string(),
      commissions: z.number().int(),
      commission_cents: z.number().int(),
      revenue_cents: z.number().int(),
    }),
  ),
});

export const CreatePartnerOk = z.object({
  data: z.object({
    created: z.boolean().describe('false when this aff_code already named this partner: nothing was written'),
    partner_id: z.number().int(),
    partner_program_id: z.number().int(),
    aff_code: z.string(),
    status: z.string(),
    referral_url: z.string(),
  }),
});

export const SetLinkOk = z.object({
  data: z.object({ aff_code: z.string(), enabled: z.boolean(), changed: z.boolean() }),
});

export const TestEventOk = z.object({
  data: z.object({
    created: z.boolean().describe('false when this reference already ran: the first run is answered'),
    event_type: z.enum(['click', 'lead', 'sale']),
    reference: z.string(),
    created_at: z.string(),
  }),
});

export const SummaryOk = z.object({
  data: z.object({
    program: z.object({ id: z.number().int(), name: z.string(), domain: z.string() }),
    period: PerformanceOk.shape.meta.describe('The range and previous range of the totals, as the performance endpoint reports them'),
    totals: PerformanceOk.shape.metrics.describe('The performance endpoint\'s totals and trends for the same range'),
    reporting: ReportingTotals.describe('The totals in the program\'s reporting currency, with the rates used and what has no rate (issue 30)'),
    partners: z.object({ approved: z.number().int() }),
    links: z.object({ enabled: z.number().int(), disabled: z.number().int() }),
  }),
});
