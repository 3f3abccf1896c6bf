import { sql, type Database } from '../../core/db.js';
import { regenerateProgramKey } from '../../domain/programs/api-keys.js';
import { createProgram, getProgram, updateProgram } from '../../domain/programs/programs.js';
import { workspacesOf } from '../../domain/access/workspaces.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { ApiKeyIssued, CreateProgramRequest, Program, ProgramListItem, UpdateProgramRequest, checkCommissionRate, checkRecurringMonths, data, managementErrors, programView } from './schemas.js';
import { sessionUserOf } from './session.js';

/** What a dashboard shows to pick a program: every program of every workspace the user belongs to. */
const programsOfUser = sql(
  'programs.list_for_user',
  `SELECT p.id, p.workspace_id, p.name, p.domain FROM programs p JOIN members m ON m.workspace_id = p.workspace_id
    WHERE m.user_id = $1 ORDER BY p.workspace_id, p.id`,
);


const config = { surface: 'management' as const };

/** Programs: create (its API key is created with it), list, change settings, (re)generate the key. */
export function programRoutes(app: ZodApp, { db, auth }: { db: Database; auth: Auth }) {
  // Who may do what, and the 401/403 of each refusal: the 'management' row of the requirement table.
  const session = auth.require('management');

  app.post(
    '/programs',
    {
      config,
      ...session,
      schema: { summary: 'Create a program (its API key is created with it)', body: CreateProgramRequest, response: { 200: data(Program), ...managementErrors } },
    },
    async (request) => {
      const b = request.body;
      let workspaceId = b.workspace_id;
      if (workspaceId === undefined) {
        const memberships = await workspacesOf(db, sessionUserOf(request));
        if (memberships.length !== 1) throw badRequest(M.management.workspaceRequired);
        workspaceId = memberships[0]!.workspaceId;
      }
      await auth.checkWorkspace(request, 'management', 'program:write', workspaceId);
      // A rule turned off from the start is an owner's choice, as a change is (issue 31).
      if (b.fraud_rules && Object.values(b.fraud_rules).includes(false)) await auth.checkWorkspace(request, 'management', 'money:write', workspaceId);
      checkCommissionRate(b.commission_type, b.commission_rate);
      checkRecurringMonths(b.commission_type, b.recurring_months);
      const program = await createProgram(db, workspaceId, {
        name: b.name,
        domain: b.domain,
        commission_type: b.commission_type,
        commission_rate: b.commission_rate,
        recurring_months: b.recurring_months ?? null,
        attribution_window_days: b.attribution_window_days ?? 60,
        lead_auth: b.lead_auth ?? 'server_required',
        paymentTrackingMode: b.paymentTrackingMode ?? 'processor_connect',
        allowed_origins: b.allowed_origins ?? [],
        fraud_rules: b.fraud_rules,
      }, auditContextOf(request));
      return { data: programView(program) };
    },
  );

  app.get(
    '/programs',
    {
      config,
      ...session,
      schema: { summary: "List the programs of the session's workspaces", response: { 200: data(ProgramListItem.array()), ...managementErrors } },
    },
    // The list is the user's memberships: it needs no check beyond the session.
    async (request) => ({
      data: await db.many<ProgramListItem>(programsOfUser, [sessionUserOf(request)]),
    }),
  );

  app.patch(
    '/programs/:programId',
    {
      config,
      ...auth.require('management', 'program:write'),
      schema: { summary: 'Change program settings', params: programIdParam, body: UpdateProgramRequest, response: { 200: data(Program), ...managementErrors } },
    },
    async (request) => {
      const { programId } = request.params;
      const current = (await getProgram(db, programId))!;
      // The commission terms are owners' (issue 33): a member may change every other setting.
      const { commission_type: type, commission_rate: rate, effective_from: termsEffectiveFrom, ...settings } = request.body;
      // A one-off type has no recurring limit: changing to one clears it (issue 30).
      const nextType = type ?? current.commission_type;
      const months = settings.recurring_months !== undefined ? settings.recurring_months : nextType === 'recurring_percent' || nextType === 'recurring_fixed' ? undefined : null;
      if (
        (type !== undefined && type !== current.commission_type) ||
        (rate !== undefined && rate !== Number(current.commission_rate)) ||
        (months !== undefined && months !== current.recurring_months) ||
        termsEffectiveFrom !== undefined
      ) {
        await auth.checkProgram(request, 'management', 'terms:write', programId);
      }
      // The fraud rules decide which commissions wait for an owner's review: owners' (issue 31).
      const rules = settings.fraud_rules;
      if (rules && Object.entries(rules).some(([name, on]) => current.fraud_rules?.[name as keyof typeof rules] !== on)) {
        await auth.checkProgram(request, 'management', 'money:write', programId);
      }
      checkCommissionRate(nextType, rate ?? current.commission_rate);
      checkRecurringMonths(nextType, settings.recurring_months);
      const change = { ...settings, commission_type: type, commission_rate: rate, recurring_months: months, termsEffectiveFrom };
      return { data: programView(await updateProgram(db, programId, change, auditContextOf(request))) };
    },
  );

  app.post(
    '/programs/:programId/api-key',
    {
      config,
      ...auth.require('management', 'api_key:manage'),
      schema: {
        summary: 'Generate or regenerate the program API key (owners only; the full key is shown once)',
        params: programIdParam,
        response: { 200: data(ApiKeyIssued), ...managementErrors },
      },
    },
    async (request) => {
      const { apiKey, masked } = await regenerateProgramKey(db, request.params.programId, auditContextOf(request));
      return { data: { program_id: request.params.programId, api_key: apiKey, api_token_masked: masked } };
    },
  );
}
