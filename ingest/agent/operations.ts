/**
 * Every agent operation once (issue 13): its path, scope, input and output schemas, MCP name and
 * annotations, and what it does. `agent.ts` makes an HTTP route of each, `mcp.ts` an MCP tool of
 * each; both run the same `run` after the same permission check.
 */
import type { z } from 'zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { clicksPage } from '../../queries/clicks.js';
import { performanceWithReporting } from '../../queries/reporting-totals.js';
import type { AgentScope, AuthorizedProgram } from '../../domain/access/access.js';
import type { AuditContext } from '../../domain/audit/audit.js';
import { commissionReconciliation, commissionsPage, partnersPage, programCounts, programsOfWorkspace, salesPage, topPartners, type ListFilter } from '../../domain/agent/reads.js';
import { createAgentPartner, runAgentTestEvent, setAgentLink, type AgentActor } from '../../domain/agent/writes.js';
import { integrationFacts, integrationStatus } from '../../domain/programs/integration-status.js';
import { getProgram, referralUrl } from '../../domain/programs/programs.js';
import { PerformanceQuery, PerformanceReportingOk, StatusOk } from '../dashboard/schemas.js';
import { AUDIT_OPERATIONS } from './audit-operation.js';
import { MONEY_OPERATIONS } from './money-operations.js';
import { TERMS_OPERATIONS } from './terms-operation.js';
import * as S from './schemas.js';

/** What an operation runs with: the key's workspace and id, and the program the check allowed. */
export interface AgentContext {
  db: Database;
  warehouse: Warehouse | undefined;
  clock: () => number;
  actor: AgentActor;
  /** The key and the request, for the audit entries of its writes. */
  audit: AuditContext;
  /** Set for every operation on a program (all but list_programs). */
  program: AuthorizedProgram | undefined;
}

export interface OperationInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

type AnyObject = z.ZodType<Record<string, unknown>>;

export interface AgentOperation<P extends AnyObject = AnyObject, Q extends AnyObject = AnyObject, B extends AnyObject = AnyObject> {
  /** The MCP tool name. */
  name: string;
  summary: string;
  method: 'GET' | 'POST' | 'PATCH';
  /** Under /api/agent/v1. */
  path: string;
  scope: AgentScope;
  params?: P;
  query?: Q;
  body?: B;
  response: z.ZodType;
  /** MCP tool annotations; reads are read-only and idempotent. */
  annotations: { readOnlyHint: boolean; idempotentHint: boolean; destructiveHint: boolean };
  run(ctx: AgentContext, input: OperationInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<object>;
}

const define = <P extends AnyObject, Q extends AnyObject, B extends AnyObject>(op: AgentOperation<P, Q, B>) => op as unknown as AgentOperation;

const READ = { readOnlyHint: true, idempotentHint: true, destructiveHint: false };

const iso = (d: Date | string) => (d instanceof Date ? d.toISOString() : new Date(d).toISOString());
const isoOrNull = (d: Date | string | null) => (d === null ? null : iso(d));

const programIdOf = (ctx: AgentContext) => ctx.program!.id;

const listFilter = (q: { from?: string; to?: string; partner_id?: number; status?: string; cursor?: S.Cursor; limit?: number }): ListFilter => ({
  from: q.from,
  to: q.to,
  partnerId: q.partner_id,
  status: q.status,
  after: q.cursor,
  limit: q.limit ?? 50,
});

/** A page of a list, its next_cursor in that list's own cursor. */
const pageBody = <T>(cursor: S.ListCursor, items: T[], next: S.Cursor | undefined) => ({ data: items, has_more: next !== undefined, next_cursor: next ? cursor.encode(next) : null });

function requireWarehouse(ctx: AgentContext): Warehouse {
  if (!ctx.warehouse) throw new Error('no warehouse is configured: performance figures and clicks cannot be read');
  return ctx.warehouse;
}

/** The dashboard's own computation, so the agent's figures are the dashboard's for the same program and period. */
const performanceOf = async (ctx: AgentContext, query: z.output<typeof PerformanceQuery>) =>
  performanceWithReporting(
    requireWarehouse(ctx),
    { programId: programIdOf(ctx), programCreatedAt: ctx.program!.createdAt, query, now: ctx.clock() },
    { workspaceId: ctx.program!.workspaceId, reportingCurrency: ctx.program!.reportingCurrency },
  );

export const OPERATIONS: readonly AgentOperation[] = [
  define({
    name: 'list_programs',
    summary: "List the programs of the key's workspace",
    method: 'GET',
    path: '/programs',
    scope: 'programs:read',
    query: S.EmptyQuery,
    response: S.ProgramListOk,
    annotations: READ,
    async run(ctx) {
      const rows = await programsOfWorkspace(ctx.db, ctx.actor.workspaceId);
      return { data: rows.map((r) => ({ id: Number(r.id), name: r.name, domain: r.domain, created_at: iso(r.created_at) })) };
    },
  }),
  define({
    name: 'get_program',
    summary: 'Read a program: settings, commission terms, masked API key',
    method: 'GET',
    path: '/programs/:programId',
    scope: 'programs:read',
    params: S.ProgramParams,
    query: S.EmptyQuery,
    response: S.ProgramOk,
    annotations: READ,
    async run(ctx) {
      const p = (await getProgram(ctx.db, programIdOf(ctx)))!;
      return { data: { ...p, id: Number(p.id), workspace_id: Number(p.workspace_id), created_at: iso(p.created_at), updated_at: iso(p.updated_at) } };
    },
  }),
  define({
    name: 'get_integration_status',
    summary: 'Integration checklist of a program (the dashboard status endpoint)',
    method: 'GET',
    path: '/programs/:programId/status',
    scope: 'programs:read',
    params: S.ProgramParams,
    query: S.EmptyQuery,
    response: StatusOk,
    annotations: READ,
    async run(ctx) {
      const id = programIdOf(ctx);
      const facts = (await integrationFacts(ctx.db, id))!;
      return { data: integrationStatus(id, facts, new Date(ctx.clock())) };
    },
  }),
  define({
    name: 'get_performance',
    summary: 'Daily performance, totals and trends: the dashboard performance endpoint, same query, same numbers',
    method: 'GET',
    path: '/programs/:programId/performance',
    scope: 'reports:read',
    params: S.ProgramParams,
    query: PerformanceQuery,
    response: PerformanceReportingOk,
    annotations: READ,
    run: (ctx, { query }) => performanceOf(ctx, query),
  }),
  define({
    name: 'get_program_summary',
    summary: 'Program summary in one call: the performance totals and trends of a period, approved partners, links',
    method: 'GET',
    path: '/programs/:programId/summary',
    scope: 'reports:read',
    params: S.ProgramParams,
    query: PerformanceQuery,
    response: S.SummaryOk,
    annotations: READ,
    async run(ctx, { query }) {
      const id = programIdOf(ctx);
      const [figures, counts, program] = await Promise.all([performanceOf(ctx, query), programCounts(ctx.db, id), getProgram(ctx.db, id)]);
      return {
        data: {
          program: { id, name: program!.name, domain: program!.domain },
          period: figures.meta,
          totals: figures.metrics,
          reporting: figures.reporting,
          partners: { approved: Number(counts.approved_partners) },
          links: { enabled: Number(counts.enabled_links), disabled: Number(counts.disabled_links) },
        },
      };
    },
  }),
  define({
    name: 'get_top_partners',
    summary: 'Top partners of a period by commission (not reversed), per currency',
    method: 'GET',
    path: '/programs/:programId/top-partners',
    scope: 'reports:read',
    params: S.ProgramParams,
    query: S.TopPartnersQuery,
    response: S.TopPartnersOk,
    annotations: READ,
    async run(ctx, { query }) {
      return { data: await topPartners(ctx.db, programIdOf(ctx), query, query.limit ?? 10) };
    },
  }),
  define({
    name: 'list_sales',
    summary: 'Sales of a program, a page at a time, oldest first (by time of payment)',
    method: 'GET',
    path: '/programs/:programId/sales',
    scope: 'sales:read',
    params: S.ProgramParams,
    query: S.SalesQuery,
    response: S.SalesOk,
    annotations: READ,
    async run(ctx, { query }) {
      const page = await salesPage(ctx.db, programIdOf(ctx), listFilter(query));
      const items = page.items.map((s) => ({
        ...s,
        customer_id: s.customer_id === null ? null : Number(s.customer_id),
        partner_id: s.partner_id === null ? null : Number(s.partner_id),
        amount_cents: Number(s.amount_cents),
        occurred_at: iso(s.occurred_at),
        created_at: iso(s.created_at),
      }));
      return pageBody(S.SalesCursor, items, page.next);
    },
  }),
  define({
    name: 'list_commissions',
    summary: 'Commissions of a program, a page at a time, oldest first (by creation)',
    method: 'GET',
    path: '/programs/:programId/commissions',
    scope: 'commissions:read',
    params: S.ProgramParams,
    query: S.CommissionsQuery,
    response: S.CommissionsOk,
    annotations: READ,
    async run(ctx, { query }) {
      const page = await commissionsPage(ctx.db, programIdOf(ctx), listFilter(query));
      const items = page.items.map((c) => ({
        ...c,
        partner_id: Number(c.partner_id),
        customer_id: c.customer_id === null ? null : Number(c.customer_id),
        commission_rate: Number(c.commission_rate),
        amount_cents: Number(c.amount_cents),
        created_at: iso(c.created_at),
        reversed_at: isoOrNull(c.reversed_at),
      }));
      return pageBody(S.CommissionsCursor, items, page.next);
    },
  }),
  define({
    name: 'get_commission_reconciliation',
    summary: 'Commissions created in a range, what of them was reversed, and the net, per partner and currency',
    method: 'GET',
    path: '/programs/:programId/commissions/reconciliation',
    scope: 'commissions:read',
    params: S.ProgramParams,
    query: S.RangeQuery,
    response: S.ReconciliationOk,
    annotations: READ,
    async run(ctx, { query }) {
      const result = await commissionReconciliation(ctx.db, programIdOf(ctx), query);
      return { data: { from: query.from ?? null, to: query.to ?? null, ...result } };
    },
  }),
  define({
    name: 'list_partners',
    summary: 'Partners of a program with their referral links, a page at a time, oldest first',
    method: 'GET',
    path: '/programs/:programId/partners',
    scope: 'partners:read',
    params: S.ProgramParams,
    query: S.PartnersQuery,
    response: S.PartnersOk,
    annotations: READ,
    async run(ctx, { query }) {
      const page = await partnersPage(ctx.db, programIdOf(ctx), listFilter(query));
      const items = page.items.map((p) => ({
        ...p,
        partner_program_id: Number(p.partner_program_id),
        partner_id: p.partner_id === null ? null : Number(p.partner_id),
        created_at: iso(p.created_at),
      }));
      return pageBody(S.PartnersCursor, items, page.next);
    },
  }),
  define({
    name: 'list_clicks',
    summary: 'Clicks of a program, a page at a time, oldest first (read from the warehouse, so a click shows once the pipeline loaded it)',
    method: 'GET',
    path: '/programs/:programId/clicks',
    scope: 'clicks:read',
    params: S.ProgramParams,
    query: S.ClicksQuery,
    response: S.ClicksOk,
    annotations: READ,
    async run(ctx, { query }) {
      const f = listFilter(query);
      const page = await clicksPage(requireWarehouse(ctx), {
        programId: programIdOf(ctx),
        from: f.from,
        to: f.to,
        partnerId: f.partnerId,
        kind: query.status,
        after: f.after,
        limit: f.limit,
      });
      return pageBody(S.ClicksCursor, page.items, page.next);
    },
  }),
  define({
    name: 'create_partner',
    summary: 'Create a partner with an approved partner-program record and a referral link (idempotent by aff_code)',
    method: 'POST',
    path: '/programs/:programId/partners',
    scope: 'partners:write',
    params: S.ProgramParams,
    body: S.CreatePartnerBody,
    response: S.CreatePartnerOk,
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false },
    async run(ctx, { body }) {
      const id = programIdOf(ctx);
      const partner = await createAgentPartner(ctx.db, ctx.actor, id, { name: body.name, email: body.email, affCode: body.aff_code }, ctx.audit);
      const program = (await getProgram(ctx.db, id))!;
      return {
        data: {
          created: partner.outcome === 'created',
          partner_id: partner.partnerId,
          partner_program_id: partner.partnerProgramId,
          aff_code: partner.affCode,
          status: partner.status,
          referral_url: referralUrl(program.domain, partner.affCode),
        },
      };
    },
  }),
  define({
    name: 'set_link_enabled',
    summary: 'Turn a referral link on or off (a disabled link answers clicks with 410 link_disabled)',
    method: 'PATCH',
    path: '/programs/:programId/links/:affCode',
    scope: 'links:write',
    params: S.LinkParams,
    body: S.SetLinkBody,
    response: S.SetLinkOk,
    // Turning a live link off stops its clicks being recorded: destructive, though reversible.
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: true },
    async run(ctx, { params, body }) {
      const link = await setAgentLink(ctx.db, ctx.actor, programIdOf(ctx), params.affCode as string, body.enabled as boolean, ctx.audit);
      return { data: { aff_code: link.affCode, enabled: link.enabled, changed: link.outcome === 'updated' } };
    },
  }),
  define({
    name: 'run_test_event',
    summary: 'Run a synthetic test event (click, lead or sale) for the integration checklist; records no real traffic and moves no money',
    method: 'POST',
    path: '/programs/:programId/test-events',
    scope: 'test_events:write',
    params: S.ProgramParams,
    body: S.TestEventBody,
    response: S.TestEventOk,
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false },
    async run(ctx, { body }) {
      const run = await runAgentTestEvent(ctx.db, ctx.actor, programIdOf(ctx), body.event_type, body.reference);
      return { data: { created: run.outcome === 'created', event_type: run.eventType, reference: run.reference, created_at: iso(run.createdAt) } };
    },
  }),
  // The ledger and payouts (issue 34): reads only.
  ...MONEY_OPERATIONS,
  // The audit log (issue 32).
  ...AUDIT_OPERATIONS,
  // Commission rule versions (issue 30).
  ...TERMS_OPERATIONS,
];
