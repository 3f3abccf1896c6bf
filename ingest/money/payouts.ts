import { exportFile, exportRows } from '../../domain/ledger/exports.js';
import { createPayouts, getPayout, payoutsPage, settlePayout } from '../../domain/ledger/payouts.js';
import { auditContextOf } from '../http/audit.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { config, idempotencyKey, moneyAccess, type MoneyContext } from './context.js';
import {
  CreatePayoutsRequest, EmptyRequest, ExportQuery, ListedPayout, MarkPaidRequest, Payout, PayoutParams, PayoutRun, PayoutsCursor, PayoutsQuery, data, moneyErrors, page,
} from './schemas.js';
import { payoutOut } from './views.js';

const CONTENT_TYPE = 'text/csv; charset=utf-8';

/** Payouts (partner-program.md, "Payouts"): runs, reads, mark-paid, cancel, and the files for the payout providers. */
export function payoutRoutes(app: ZodApp, { db, auth, clock }: MoneyContext) {
  const { read, write } = moneyAccess(auth);

  app.post(
    '/programs/:programId/payouts',
    {
      config,
      ...write,
      schema: {
        summary:
          'A payout run: one payout per partner and currency whose approved balance as of cutoff reaches the minimum (owners). ' +
          'Concurrent runs never cover a commission twice; an Idempotency-Key answers a retry with the first run',
        params: programIdParam,
        body: CreatePayoutsRequest,
        response: { 200: data(PayoutRun), ...moneyErrors },
      },
    },
    async (request) => {
      const now = clock();
      const cutoff = request.body.cutoff ?? new Date(now);
      if (cutoff.getTime() > now) throw badRequest(M.money.futureCutoff);
      const key = idempotencyKey(request);
      const run = await createPayouts(db, request.params.programId, cutoff, key, auditContextOf(request));
      return { data: { run_id: run.runId, replayed: run.replayed, payouts: run.payouts.map(payoutOut) } };
    },
  );

  app.get(
    '/programs/:programId/payouts',
    {
      config,
      ...read,
      schema: {
        summary: "A program's payouts, oldest first, each with its partner's name (filters status, partner_id; cursor pages)",
        params: programIdParam,
        querystring: PayoutsQuery,
        response: { 200: page(ListedPayout), ...moneyErrors },
      },
    },
    async (request) => {
      const q = request.query;
      const result = await payoutsPage(db, request.params.programId, { status: q.status, partnerId: q.partner_id, after: q.cursor, limit: q.limit ?? 50 });
      return {
        data: result.items.map((p) => ({ ...payoutOut(p), partner_name: p.partner_name })),
        has_more: result.next !== undefined,
        next_cursor: result.next ? PayoutsCursor.encode(result.next) : null,
      };
    },
  );

  // Before /payouts/:payoutId, which would otherwise take "export" for an id.
  app.get(
    '/programs/:programId/payouts/export',
    {
      config,
      ...read,
      schema: {
        summary: 'The payouts as a file for a payout provider: csv (all), paypal (PayPal Payouts bulk file), wise (Wise batch, send by email)',
        params: programIdParam,
        querystring: ExportQuery,
      },
    },
    async (request, reply) => {
      const { status, format, currency } = request.query;
      const rows = await exportRows(db, request.params.programId, status, currency);
      const file = exportFile(format, rows);
      if (format === 'paypal' && new Set(rows.filter((r) => r.method?.method === 'paypal').map((r) => r.currency)).size > 1) {
        throw badRequest(M.money.paypalCurrency);
      }
      const name = `payouts-${request.params.programId}-${status}${currency ? `-${currency}` : ''}-${format}.csv`;
      return reply
        .header('content-type', CONTENT_TYPE)
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('x-payouts-included', String(file.included))
        .header('x-payouts-omitted', String(file.omitted))
        .send(file.body);
    },
  );

  app.get(
    '/programs/:programId/payouts/:payoutId',
    { config, ...read, schema: { summary: 'A payout', params: PayoutParams, response: { 200: data(Payout), ...moneyErrors } } },
    async (request) => ({ data: payoutOut(await getPayout(db, request.params.programId, request.params.payoutId)) }),
  );

  app.post(
    '/programs/:programId/payouts/:payoutId/mark-paid',
    {
      config,
      ...write,
      schema: {
        summary: 'Mark a pending payout paid: its payout ledger entry, its commissions paid (owners; 409 when not pending)',
        params: PayoutParams,
        body: MarkPaidRequest,
        response: { 200: data(Payout), ...moneyErrors },
      },
    },
    async (request) => ({ data: payoutOut(await settlePayout(db, request.params.programId, request.params.payoutId, 'paid', request.body.reference, auditContextOf(request))) }),
  );

  app.post(
    '/programs/:programId/payouts/:payoutId/cancel',
    {
      config,
      ...write,
      schema: {
        summary: 'Cancel a pending payout: its commissions approved again, its netted entries outstanding again (owners; 409 when not pending)',
        params: PayoutParams,
        body: EmptyRequest,
        response: { 200: data(Payout), ...moneyErrors },
      },
    },
    async (request) => ({ data: payoutOut(await settlePayout(db, request.params.programId, request.params.payoutId, 'canceled', null, auditContextOf(request))) }),
  );
}
