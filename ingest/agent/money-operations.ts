/**
 * The agent API's reads of the ledger and payouts (issue 34): balances and a partner's ledger
 * (scope commissions:read), payouts and statements (scope payouts:read). Read-only: no agent
 * operation moves money (approvals, adjustments and payouts are owners' writes in the console).
 * Served as HTTP routes and MCP tools like every operation of operations.ts.
 */
import { z } from 'zod';
import { partnerBalances } from '../../domain/ledger/balances.js';
import { ledgerPage } from '../../domain/ledger/entries.js';
import { getPayout, payoutsPage } from '../../domain/ledger/payouts.js';
import { statement } from '../../domain/ledger/statements.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { Balance, LedgerCursor, LedgerEntry, LedgerQuery, PAYOUT_STATUSES, Payout, PayoutsCursor, Statement, data, limit, page, payoutId, period, unknownQuery } from '../money/schemas.js';
import { entryOut, payoutOut } from '../money/views.js';
import type { AgentOperation } from './operations.js';
import { positiveId, ProgramParams } from './schemas.js';

const define = <P extends z.ZodType<Record<string, unknown>>, Q extends z.ZodType<Record<string, unknown>>>(op: AgentOperation<P, Q>) => op as unknown as AgentOperation;
const READ = { readOnlyHint: true, idempotentHint: true, destructiveHint: false };
const $ = M.money;

const PartnerParams = ProgramParams.extend({ partnerId: positiveId($.partnerId).describe('The partner id') });
const PayoutParams = ProgramParams.extend({ payoutId: payoutId.describe('The payout id') });
const PeriodParams = ProgramParams.extend({ period: period.describe('A UTC month, YYYY-MM') });
const PayoutsQuery = z.strictObject(
  {
    status: z.enum(PAYOUT_STATUSES, { error: $.status(PAYOUT_STATUSES) }).optional().describe('Only payouts in this state'),
    partner_id: positiveId(M.agent.partnerId).optional().describe('Only this partner'),
    limit,
    cursor: PayoutsCursor.schema,
  },
  unknownQuery,
);
const EmptyQuery = z.strictObject({}, unknownQuery);

const programOf = (ctx: { program?: { id: number } }) => ctx.program!.id;

export const MONEY_OPERATIONS: readonly AgentOperation[] = [
  define({
    name: 'get_partner_balance',
    summary: "A partner's balances per currency: pending, held, approved (payable), processing (in a payout), paid, and the ledger balance",
    method: 'GET',
    path: '/programs/:programId/partners/:partnerId/balance',
    scope: 'commissions:read',
    params: PartnerParams,
    query: EmptyQuery,
    response: data(Balance.array()),
    annotations: READ,
    async run(ctx, { params }) {
      return { data: await partnerBalances(ctx.db, programOf(ctx), params.partnerId as number) };
    },
  }),
  define({
    name: 'list_ledger_entries',
    summary: "A partner's ledger entries (every money movement, append-only), a page at a time, oldest first",
    method: 'GET',
    path: '/programs/:programId/partners/:partnerId/ledger',
    scope: 'commissions:read',
    params: PartnerParams,
    query: LedgerQuery,
    response: page(LedgerEntry),
    annotations: READ,
    async run(ctx, { params, query }) {
      const cursor = query.cursor as { id: string } | undefined;
      const result = await ledgerPage(ctx.db, programOf(ctx), params.partnerId as number, cursor ? Number(cursor.id) : undefined, (query.limit as number | undefined) ?? 50);
      return { data: result.items.map(entryOut), has_more: result.next !== undefined, next_cursor: result.next ? LedgerCursor.encode(result.next) : null };
    },
  }),
  define({
    name: 'list_payouts',
    summary: 'Payouts of a program, a page at a time, oldest first (filters status, partner_id)',
    method: 'GET',
    path: '/programs/:programId/payouts',
    scope: 'payouts:read',
    params: ProgramParams,
    query: PayoutsQuery,
    response: page(Payout),
    annotations: READ,
    async run(ctx, { query }) {
      const result = await payoutsPage(ctx.db, programOf(ctx), {
        status: query.status as (typeof PAYOUT_STATUSES)[number] | undefined,
        partnerId: query.partner_id as number | undefined,
        after: query.cursor as { at: string; id: string } | undefined,
        limit: (query.limit as number | undefined) ?? 50,
      });
      return { data: result.items.map(payoutOut), has_more: result.next !== undefined, next_cursor: result.next ? PayoutsCursor.encode(result.next) : null };
    },
  }),
  define({
    name: 'get_payout',
    summary: 'A payout: amount, status, the commissions it covers and the clawback and manual entries it nets',
    method: 'GET',
    path: '/programs/:programId/payouts/:payoutId',
    scope: 'payouts:read',
    params: PayoutParams,
    query: EmptyQuery,
    response: data(Payout),
    annotations: READ,
    async run(ctx, { params }) {
      return { data: payoutOut(await getPayout(ctx.db, programOf(ctx), params.payoutId as string)) };
    },
  }),
  define({
    name: 'get_statement',
    summary: "A UTC month's statement: per partner and currency opening, movements by kind and closing; program totals; its SHA-256 digest",
    method: 'GET',
    path: '/programs/:programId/statements/:period',
    scope: 'payouts:read',
    params: PeriodParams,
    query: EmptyQuery,
    response: data(Statement),
    annotations: READ,
    async run(ctx, { params }) {
      const month = params.period as string;
      if (month > new Date(ctx.clock()).toISOString().slice(0, 7)) throw badRequest($.futurePeriod);
      return { data: await statement(ctx.db, programOf(ctx), month) };
    },
  }),
];
