/**
 * Request and response schemas of a partner's links and promo codes and of the sub-id report
 * (issue 31, points 3 and 4).
 */
import { z } from 'zod';
import { M } from '../http/messages.js';
import { body } from '../http/schemas.js';
import { PartnerParams } from './console-schemas.js';

const L = M.links;

const positive = (message: string) =>
  z
    .string({ error: message })
    .regex(/^[1-9][0-9]{0,14}$/, message)
    .transform(Number);

export const PartnerLinkParams = PartnerParams.extend({ linkId: positive(L.linkId) });
export const PromoCodeParams = PartnerParams.extend({ promoCodeId: positive(L.promoCodeId) });

export const EnabledRequest = body({ enabled: z.boolean({ error: M.management.enabled }) });

export const PartnerLinkView = z.object({
  id: z.number().int(),
  aff_code: z.string(),
  enabled: z.boolean(),
  referral_url: z.string().describe("The program's site with ?aff=<code>; add sub1..sub5 (at most 100 characters each) to tell traffic apart"),
  created_at: z.string(),
});
export const PartnerLinks = z.object({ data: z.array(PartnerLinkView) });

/** Letters, digits, dashes and underscores: what a checkout accepts as a code, and safe to print anywhere. */
const PROMO_CODE = /^[A-Za-z0-9_-]{2,64}$/;
export const PromoCodeRequest = body({
  code: z.string({ error: L.code }).regex(PROMO_CODE, L.code).describe('Unique in the program ignoring case'),
  processor_promotion_id: z
    .string({ error: L.promotionId })
    .regex(/^[A-Za-z0-9_-]{1,255}$/, L.promotionId)
    .optional()
    .describe("The processor's promotion code id (promo_...), unique in the program"),
});
export const PromoCodeView = z.object({
  id: z.number().int(),
  partner_id: z.number().int(),
  code: z.string(),
  processor_promotion_id: z.string().nullable(),
  enabled: z.boolean(),
  created_at: z.string(),
});
export const PromoCodes = z.object({ data: z.array(PromoCodeView) });

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const day = z
  .string({ error: L.range })
  .regex(DAY, L.range)
  .refine((v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v), L.range);

/** The report's query: which sub-id, the UTC days (default the last 30), optionally one partner. */
export const SubIdQuery = z
  .strictObject(
    {
      sub: z
        .string({ error: L.sub })
        .regex(/^[1-5]$/, L.sub)
        .transform((v) => Number(v) as 1 | 2 | 3 | 4 | 5)
        .default(1),
      from: day.optional(),
      to: day.optional(),
      partner_id: positive(L.partnerFilter).optional(),
    },
    { error: (issue) => (issue.code === 'unrecognized_keys' ? M.body.unknownField(issue.keys) : L.range) },
  );

/** The portal's query: the same, its partner filter always the signed-in partner's. */
export const PortalSubIdQuery = SubIdQuery.omit({ partner_id: true });

const Money = z.object({ currency: z.string(), amount_minor: z.number().int() });
export const SubIdBreakdown = z.object({
  data: z.array(
    z.object({
      value: z.string().nullable().describe('The sub-id value; null: none'),
      clicks: z.number().int(),
      leads: z.number().int(),
      sales: z.number().int(),
      revenue: z.array(Money),
      commission: z.array(Money),
    }),
  ),
  meta: z.object({ sub: z.number().int(), from: z.string(), to: z.string(), partner_id: z.number().int().nullable() }),
});
