import { createLeadWriter } from '../../domain/tracking/leads.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import type { ZodApp } from '../http/schemas.js';
import { allowBrowser } from './browser.js';
import type { TrackingRouteDeps } from './route-deps.js';
import { LeadRequest, LeadResponse, trackingErrors } from './schemas.js';

/** POST /lead: a signup, from the browser SDK (no key, where the program allows it) or a brand's server. */
export function leadRoute(app: ZodApp, deps: TrackingRouteDeps) {
  const recordLead = createLeadWriter(deps.db);
  app.post(
    '/lead',
    {
      config: { surface: 'lead' },
      bodyLimit: deps.bodyLimit,
      onRequest: [deps.limitByIp('lead', 30), deps.key('lead', true)],
      onSend: deps.browserErrors,
      schema: { summary: 'Record a signup (lead)', body: LeadRequest, response: { 200: LeadResponse, ...trackingErrors } },
    },
    async (request, reply) => {
      const { click_id, customer_key, email, additional_data } = request.body;
      if (click_id === undefined && customer_key === undefined) throw badRequest(M.lead.idRequired);
      deps.checkProgramId(request, additional_data?.program_id);
      const lead = await recordLead({
        clickId: click_id,
        customerKey: customer_key,
        email,
        test: additional_data?.test_mode ?? false,
        keyProgramId: request.programKey?.programId,
        origin: request.programKey ? undefined : request.headers.origin,
      });
      allowBrowser(request, reply);
      return {
        data: {
          customer_id: lead.customerId,
          program_id: lead.programId,
          click_id: lead.clickId,
          status: lead.status,
          signup_date: lead.signupDate?.toISOString() ?? null,
          ...(lead.provisional && !request.programKey ? { provisional: true as const } : {}),
        },
      };
    },
  );
}
