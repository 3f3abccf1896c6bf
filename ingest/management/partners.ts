import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { createPartnerLink } from '../../domain/partners/links.js';
import { ledgerBalances, listPartners } from '../../domain/programs/partner-list.js';
import { createPartner, getProgram, referralUrl, setLinkEnabled } from '../../domain/programs/programs.js';
import { createPartnerTotalsCache, noActivity, type PartnerTotals } from '../../queries/partners.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { linkView } from './partner-links.js';
import { PartnerLink, PartnerLinkRequest, PartnerList, PartnerListQuery, PartnerParams } from './console-schemas.js';
import { CreatePartnerRequest, LinkRequest, LinkParams, LinkState, PartnerCreated, data, managementErrors } from './schemas.js';

const config = { surface: 'management' as const };

/**
 * A program's partners and their referral links: the console's list (searchable, with each
 * partner's all-time totals from the warehouse), create a partner (approved, with a link), add a
 * link, turn a link off or on.
 */
export function partnerRoutes(app: ZodApp, { db, auth, warehouse }: { db: Database; auth: Auth; warehouse: Warehouse | undefined }) {
  const programWrite = auth.require('management', 'program:write');
  const cache = warehouse ? createPartnerTotalsCache(warehouse, { onError: (err) => app.log.error({ err }, 'partner totals could not be computed') }) : undefined;

  app.get(
    '/programs/:programId/partners',
    {
      config,
      ...auth.require('management', 'tracking:read'),
      schema: {
        summary: "The program's partners, newest first, with their links and all-time clicks, paid sales and commission",
        params: programIdParam,
        querystring: PartnerListQuery,
        response: { 200: PartnerList, ...managementErrors },
      },
    },
    async (request) => {
      const { programId } = request.params;
      // Both stores at once: the list from Postgres, the totals from the warehouse; then the
      // ledger's balances of the partners listed.
      const [program, rows, cached] = await Promise.all([getProgram(db, programId), listPartners(db, programId, request.query), cache?.get(programId)]);
      const ledger = await ledgerBalances(db, programId, rows.flatMap((r) => (r.partner_id === null ? [] : [Number(r.partner_id)])));
      const totals = cached?.totals;
      const none: PartnerTotals | undefined = totals ? noActivity() : undefined;
      return {
        data: rows.map((r) => {
          const t = r.partner_id !== null ? (totals?.get(Number(r.partner_id)) ?? none) : none;
          return {
            partner_id: r.partner_id === null ? null : Number(r.partner_id),
            partner_program_id: Number(r.partner_program_id),
            name: r.name,
            email: r.email,
            status: r.status,
            group_id: r.group_id,
            created_at: r.created_at.toISOString(),
            links: r.links.map((l) => ({ ...l, referral_url: referralUrl(program!.domain, l.aff_code) })),
            clicks: t?.clicks ?? null,
            sales: t?.sales ?? null,
            revenue: t?.revenue ?? null,
            commission: t?.commission ?? null,
            balance: ledger.get(Number(r.partner_id)) ?? [],
          };
        }),
        meta: {
          total: rows[0]?.total ?? 0,
          shown: rows.length,
          totals: totals ? ('warehouse' as const) : cache ? ('computing' as const) : ('unavailable' as const),
          totals_as_of: cached?.asOf === undefined ? null : new Date(cached.asOf).toISOString(),
        },
      };
    },
  );

  app.post(
    '/programs/:programId/partners/:partnerId/links',
    {
      config,
      ...programWrite,
      schema: { summary: 'Add a referral link for a partner of the program', params: PartnerParams, body: PartnerLinkRequest, response: { 200: data(PartnerLink), ...managementErrors } },
    },
    async (request) => {
      const { programId, partnerId } = request.params;
      return { data: linkView(await createPartnerLink(db, programId, partnerId, request.body.aff_code, auditContextOf(request))) };
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
        body: CreatePartnerRequest,
        response: { 200: data(PartnerCreated), ...managementErrors },
      },
    },
    async (request) => {
      const program = (await getProgram(db, request.params.programId))!;
      const partner = await createPartner(db, program.id, {
        name: request.body.name,
        email: request.body.email,
        affCode: request.body.aff_code,
      }, auditContextOf(request));
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
      schema: { summary: 'Turn a referral link off or on', params: LinkParams, body: LinkRequest, response: { 200: data(LinkState), ...managementErrors } },
    },
    async (request) => {
      const link = await setLinkEnabled(db, request.params.programId, request.params.affCode, request.body.enabled, auditContextOf(request));
      return { data: { aff_code: link.aff_code, enabled: link.enabled } };
    },
  );
}
