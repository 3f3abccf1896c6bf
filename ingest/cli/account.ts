import type { FastifyRequest } from 'fastify';
import { sql } from '../../core/db.js';
import { createProgram } from '../../domain/programs/programs.js';
import { workspacesOf } from '../../domain/access/workspaces.js';
import { auditContextOf } from '../http/audit.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import type { ZodApp } from '../http/schemas.js';
import { checkCommissionRate, programView } from '../management/schemas.js';
import type { CliRouteContext } from './context.js';
import { InitRequest, InitResponse, ProgramsResponse, cliErrors, type ProgramItem } from './schemas.js';

const programsOfUser = sql(
  'cli.programs_of_user',
  `SELECT p.id, p.workspace_id AS advertiser_id, w.name AS advertiser_name, m.role, p.name, p.domain, p.commission_type,
          p.commission_rate, p.payment_tracking_mode AS "paymentTrackingMode", k.key_masked AS api_token_masked, p.created_at
     FROM members m
     JOIN workspaces w ON w.id = m.workspace_id
     JOIN programs p ON p.workspace_id = m.workspace_id
     LEFT JOIN program_api_keys k ON k.program_id = p.id
    WHERE m.user_id = $1
    ORDER BY p.workspace_id, p.id`,
);

const userOf = (request: FastifyRequest) => {
  if (request.principal?.kind !== 'account') throw new Error('this CLI route runs with an account login token');
  return request.principal.userId;
};

/** The routes of an account login token (from `svc login`): create a program, list the account's programs. */
export function accountRoutes(app: ZodApp, { deps: { db }, auth }: CliRouteContext) {
  app.post(
    '/init',
    {
      config: { surface: 'cliInit' },
      ...auth.require('cliInit'),
      schema: { summary: 'Create a program (account login token)', body: InitRequest, response: { 200: InitResponse, ...cliErrors } },
    },
    async (request) => {
      const b = request.body;
      const memberships = await workspacesOf(db, userOf(request));
      if (memberships.length === 0) throw auth.noWorkspace('cliInit');
      let workspaceId = b.advertiser_id;
      if (workspaceId === undefined) {
        if (memberships.length > 1) throw badRequest(M.cli.advertiserRequired);
        workspaceId = memberships[0]!.workspaceId;
      }
      await auth.checkWorkspace(request, 'cliInit', 'program:write', workspaceId);
      checkCommissionRate(b.commission_type, b.commission_rate);
      const program = await createProgram(db, workspaceId, {
        name: b.name,
        domain: b.domain,
        commission_type: b.commission_type,
        commission_rate: b.commission_rate,
        attribution_window_days: 60,
        lead_auth: 'server_required',
        paymentTrackingMode: 'processor_connect',
        allowed_origins: [],
      }, auditContextOf(request));
      return {
        data: {
          program: { ...programView(program), advertiser_id: program.workspace_id },
          // Authentication rule 2: the key is created with the program but not returned here.
          next_steps: [
            'A workspace owner generates the API key in the dashboard program settings (it is shown once).',
            'Then: SVC_API_KEY=<key> svc status, and svc test-event --chain',
          ],
        },
      };
    },
  );

  app.get(
    '/programs',
    {
      config: { surface: 'cliPrograms' },
      ...auth.require('cliPrograms'),
      schema: { summary: "List the programs of the account's advertisers (account login token)", response: { 200: ProgramsResponse, ...cliErrors } },
    },
    async (request) => {
      const rows = await db.many<ProgramItem & { created_at: Date | string }>(programsOfUser, [userOf(request)]);
      return { data: rows.map((r) => ({ ...r, created_at: new Date(r.created_at).toISOString() })) };
    },
  );
}
