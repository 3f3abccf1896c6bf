import type { Database } from '../../core/db.js';
import { createPartner, getProgram, referralUrl, setLinkEnabled } from '../../domain/programs/programs.js';
import type { Auth } from '../http/auth.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { CreatePartnerRequest, LinkRequest, LinkParams, LinkState, PartnerCreated, data, managementErrors } from './schemas.js';

const config = { surface: 'management' as const };

/** A program's partners and their referral links: create a partner (approved, with a link), turn a link off or on. */
export function partnerRoutes(app: ZodApp, { db, auth }: { db: Database; auth: Auth }) {
  const programWrite = auth.require('management', 'program:write');

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
      schema: { summary: 'Turn a referral link off or on', params: LinkParams, body: LinkRequest, response: { 200: data(LinkState), ...managementErrors } },
    },
    async (request) => {
      const link = await setLinkEnabled(db, request.params.programId, request.params.affCode, request.body.enabled);
      return { data: { aff_code: link.aff_code, enabled: link.enabled } };
    },
  );
}
