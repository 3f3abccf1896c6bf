/**
 * The commission terms surface's request and response schemas (issue 30; partner-program.md,
 * "Commission rules and versions"): rule versions, partner groups and their members, and the
 * what-if simulation. Terms take the management surface's field rules (commission_type,
 * commission_rate, recurring_months), so the same bad value gets the same words everywhere.
 */
import { z } from 'zod';
import { M } from '../http/messages.js';
import { body, programIdParam, text } from '../http/schemas.js';
import { commissionRate, commissionType, effectiveFrom, recurringMonths } from '../management/schemas.js';

const $ = M.terms;
const DIGITS = /^[1-9][0-9]{0,14}$/;
const id = (message: string) => z.string({ error: message }).regex(DIGITS, message).transform(Number);

export const GroupParams = programIdParam.extend({ groupId: id($.groupId) });
export const GroupPartnerParams = GroupParams.extend({ partnerId: id(M.management.partnerId) });

const termFields = {
  commission_type: commissionType.optional(),
  commission_rate: commissionRate.optional(),
  recurring_months: recurringMonths.optional(),
  effective_from: effectiveFrom.optional().describe('When the terms take effect (default now); never in the past nor before the latest version'),
};

export const CreateGroupRequest = body({ name: text(200, $.groupName), ...termFields });
export const UpdateGroupRequest = body({ name: text(200, $.groupName).optional(), ...termFields });

/** Terms as a simulation takes them: whole. */
export const TermsBody = z.object(
  { commission_type: commissionType, commission_rate: commissionRate, recurring_months: recurringMonths.optional() },
  { error: $.terms },
);

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const instant = z
  .string({ error: $.range })
  .refine((v) => ISO_INSTANT.test(v) && !Number.isNaN(Date.parse(v)), $.range)
  .transform((v) => new Date(v));
const MAX_RANGE_MS = 400 * 86_400_000;

export const SimulateRequest = body({
  terms: TermsBody,
  from: instant.describe('Sales paid from this time (inclusive)'),
  to: instant.describe('to this time (exclusive)'),
  partner_id: z.number({ error: M.management.partnerId }).int(M.management.partnerId).positive(M.management.partnerId).optional(),
}).refine((b) => !(b.from instanceof Date && b.to instanceof Date) || (b.from.getTime() < b.to.getTime() && b.to.getTime() - b.from.getTime() <= MAX_RANGE_MS), $.range);

const TermsOut = z.object({
  commission_type: z.enum(['percent', 'fixed', 'recurring_percent', 'recurring_fixed']),
  commission_rate: z.number(),
  recurring_months: z.number().int().nullable(),
});

export const RuleVersionOut = TermsOut.extend({
  id: z.number().int().describe('The rule version commissions and ledger entries record (rule_version)'),
  version: z.number().int().describe("The version's number in its program, 1 being the first terms"),
  group_id: z.number().int().nullable().describe("null: the program's own terms"),
  group_name: z.string().nullable(),
  effective_from: z.string(),
  changed_by: z.object({ type: z.string(), id: z.string(), label: z.string().nullable() }),
  created_at: z.string(),
});

export const GroupOut = z.object({
  id: z.number().int(),
  program_id: z.number().int(),
  name: z.string(),
  partner_count: z.number().int(),
  terms: TermsOut.extend({ rule_version: z.number().int(), effective_from: z.string() }).nullable().describe("null: the group's partners earn the program's terms"),
  created_at: z.string(),
  updated_at: z.string(),
});

export const PartnerGroupOut = z.object({ partner_id: z.number().int(), group_id: z.number().int().nullable() });
export const Deleted = z.object({ deleted: z.literal(true) });

const Money = z.object({ currency: z.string(), actual_minor: z.number().int(), simulated_minor: z.number().int() });
export const SimulationOut = z.object({
  from: z.string(),
  to: z.string(),
  terms: TermsOut,
  partners: z.array(
    z.object({
      partner_id: z.number().int(),
      sales: z.number().int(),
      totals: z.array(Money).describe('Per currency: the commissions the sales earned, net of refunds, and what the terms would have made'),
    }),
  ),
  totals: z.array(Money),
});
