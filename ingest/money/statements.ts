import { statement, statementPartnerNames } from '../../domain/ledger/statements.js';
import { payoutSettings, updatePayoutSettings } from '../../domain/ledger/settings.js';
import { auditContextOf } from '../http/audit.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { config, type MoneyContext } from './context.js';
import { PeriodParams, Settings, SettingsRequest, StatementOk, data, moneyErrors } from './schemas.js';

/** YYYY-MM of a time, in UTC. */
const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/** Statements (partner-program.md, "Statements and reconciliation") and the program's payout settings. */
export function statementRoutes(app: ZodApp, { db, auth, clock }: MoneyContext) {
  app.get(
    '/programs/:programId/statements/:period',
    {
      config,
      ...auth.require('management', 'tracking:read'),
      schema: {
        summary:
          "The statement of a UTC month: per partner and currency opening, movements by kind, closing; program totals; the digest. " +
          "Beside it (meta), each line's partner's name",
        params: PeriodParams,
        response: { 200: StatementOk, ...moneyErrors },
      },
    },
    async (request) => {
      const { programId, period } = request.params;
      // YYYY-MM compares as text; the current month is allowed (its statement so far).
      if (period > monthOf(clock())) throw badRequest(M.money.futurePeriod);
      const data = await statement(db, programId, period);
      return { data, meta: { partners: await statementPartnerNames(db, data) } };
    },
  );

  app.get(
    '/programs/:programId/payout-settings',
    { config, ...auth.require('management', 'tracking:read'), schema: { summary: 'The hold before commissions are payable, and the payout minimum', params: programIdParam, response: { 200: data(Settings), ...moneyErrors } } },
    async (request) => ({ data: await payoutSettings(db, request.params.programId) }),
  );

  app.patch(
    '/programs/:programId/payout-settings',
    {
      config,
      ...auth.require('management', 'money:write'),
      schema: {
        summary: 'Change commission_hold_days (0 to 365; applies to commissions created afterwards) or payout_minimum_minor (owners)',
        params: programIdParam,
        body: SettingsRequest,
        response: { 200: data(Settings), ...moneyErrors },
      },
    },
    async (request) => ({ data: await updatePayoutSettings(db, request.params.programId, request.body, auditContextOf(request)) }),
  );
}
