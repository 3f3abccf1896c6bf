import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { buildPartnerLinkUrl, listPartnerLinks, setPartnerLinkEnabled, type PartnerLink } from '../../domain/partners/links.js';
import { createPromoCode, listPromoCodes, setPromoCodeEnabled, type PromoCode } from '../../domain/partners/promo-codes.js';
import { subIdBreakdown } from '../../queries/sub-ids.js';
import { ApiError, badRequest } from '../http/api-error.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { PartnerParams } from './console-schemas.js';
import {
  EnabledRequest,
  PartnerLinkParams,
  PartnerLinks,
  PartnerLinkView,
  PromoCodeParams,
  PromoCodeRequest,
  PromoCodes,
  PromoCodeView,
  SubIdBreakdown,
  SubIdQuery,
} from './link-schemas.js';
import { data, managementErrors } from './schemas.js';

const config = { surface: 'management' as const };

/** A link as the brand's routes answer it (the portal's answer is its own). */
export function linkView(l: PartnerLink) {
  const built = buildPartnerLinkUrl(l);
  return { id: l.id, aff_code: l.aff_code, enabled: l.enabled, referral_url: built.ok ? built.url : '', created_at: l.created_at.toISOString() };
}

const codeView = (c: PromoCode) => ({ ...c, created_at: c.created_at.toISOString() });

const DAY_MS = 86_400_000;
const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * A partner's links (list, turn off or on: POST .../links is partners.ts's) and promo codes
 * (create, list, turn off or on, DELETE turns off), and the figures per sub-id (issue 31, points 3
 * and 4). Writes take program:write, as the partner's links always have; every write is audited.
 */
export function partnerLinkRoutes(app: ZodApp, { db, auth, warehouse, clock }: { db: Database; auth: Auth; warehouse: Warehouse | undefined; clock: () => number }) {
  const read = auth.require('management', 'tracking:read');
  const write = auth.require('management', 'program:write');

  app.get(
    '/programs/:programId/partners/:partnerId/links',
    { config, ...read, schema: { summary: "A partner's referral links in the program, oldest first", params: PartnerParams, response: { 200: PartnerLinks, ...managementErrors } } },
    async (request) => ({ data: (await listPartnerLinks(db, request.params.programId, request.params.partnerId)).map(linkView) }),
  );

  app.patch(
    '/programs/:programId/partners/:partnerId/links/:linkId',
    {
      config,
      ...write,
      schema: { summary: "Turn one of a partner's links off (its clicks answer 410 link_disabled) or on", params: PartnerLinkParams, body: EnabledRequest, response: { 200: data(PartnerLinkView), ...managementErrors } },
    },
    async (request) => {
      const { programId, partnerId, linkId } = request.params;
      return { data: linkView(await setPartnerLinkEnabled(db, programId, partnerId, linkId, request.body.enabled, auditContextOf(request))) };
    },
  );

  app.post(
    '/programs/:programId/partners/:partnerId/promo-codes',
    {
      config,
      ...write,
      schema: {
        summary: 'Give a partner a promo code: sales carrying it attribute customers with no attribution yet to the partner',
        params: PartnerParams,
        body: PromoCodeRequest,
        response: { 200: data(PromoCodeView), ...managementErrors },
      },
    },
    async (request) => {
      const { programId, partnerId } = request.params;
      const code = await createPromoCode(db, programId, partnerId, { code: request.body.code, processorPromotionId: request.body.processor_promotion_id }, auditContextOf(request));
      return { data: codeView(code) };
    },
  );

  app.get(
    '/programs/:programId/partners/:partnerId/promo-codes',
    { config, ...read, schema: { summary: "A partner's promo codes in the program, oldest first", params: PartnerParams, response: { 200: PromoCodes, ...managementErrors } } },
    async (request) => ({ data: (await listPromoCodes(db, request.params.programId, request.params.partnerId)).map(codeView) }),
  );

  app.patch(
    '/programs/:programId/partners/:partnerId/promo-codes/:promoCodeId',
    { config, ...write, schema: { summary: 'Turn a promo code off or on', params: PromoCodeParams, body: EnabledRequest, response: { 200: data(PromoCodeView), ...managementErrors } } },
    async (request) => {
      const { programId, partnerId, promoCodeId } = request.params;
      return { data: codeView(await setPromoCodeEnabled(db, programId, partnerId, promoCodeId, request.body.enabled, auditContextOf(request))) };
    },
  );

  app.delete(
    '/programs/:programId/partners/:partnerId/promo-codes/:promoCodeId',
    {
      config,
      ...write,
      schema: { summary: 'Turn a promo code off: it attributes nothing more and keeps its name in the program', params: PromoCodeParams, response: { 200: data(PromoCodeView), ...managementErrors } },
    },
    async (request) => {
      const { programId, partnerId, promoCodeId } = request.params;
      return { data: codeView(await setPromoCodeEnabled(db, programId, partnerId, promoCodeId, false, auditContextOf(request))) };
    },
  );

  app.get(
    '/programs/:programId/performance/sub-ids',
    {
      config,
      ...read,
      schema: {
        summary: 'Clicks, leads, sales and commission per value of one sub-id (sub=1..5) over UTC days (default the last 30)',
        params: programIdParam,
        querystring: SubIdQuery,
        response: { 200: SubIdBreakdown, ...managementErrors, 503: managementErrors[500] },
      },
    },
    async (request) => subIdAnswer(warehouse, clock, request.params.programId, request.query.partner_id, request.query),
  );
}

/**
 * The sub-id report's answer, the brand's and the portal's (ingest/partner-portal/sub-ids.ts): the
 * range defaults to the last 30 UTC days up to today; at most 366 days.
 */
export async function subIdAnswer(
  warehouse: Warehouse | undefined,
  clock: () => number,
  programId: number,
  partnerId: number | undefined,
  query: { sub: 1 | 2 | 3 | 4 | 5; from?: string | undefined; to?: string | undefined },
) {
  const { sub } = query;
  const to = query.to ?? dayString(clock());
  const from = query.from ?? dayString(Date.parse(`${to}T00:00:00Z`) - 29 * DAY_MS);
  const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS;
  if (span < 0 || span > 365) throw badRequest(M.links.range);
  if (!warehouse) throw new ApiError(503, M.links.warehouse);
  const rows = await subIdBreakdown(warehouse, { programId, partnerId, from, to, sub });
  return { data: rows, meta: { sub, from, to, partner_id: partnerId ?? null } };
}
