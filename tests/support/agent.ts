/**
 * Agent API test support (issue 13): a service with the warehouse, two workspaces with traffic
 * loaded through the embedded pipeline, agent keys with every scope and with one, and an example
 * call of every operation.
 */
import type { FastifyInstance } from 'fastify';
import { sql, type Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { AGENT_SCOPES, type AgentScope } from '../../domain/access/access.js';
import { issueAgentKey } from '../../domain/access/agent-keys.js';
import { systemContext } from '../../domain/audit/audit.js';
import { createPayouts } from '../../domain/ledger/payouts.js';
import { OPERATIONS, type AgentOperation } from '../../ingest/agent/operations.js';
import { buildTestApp, createTestProgram, unlimitedRateLimits, type TestProgram } from './app.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './databases.js';
import { embeddedDelivery } from './oracle.js';
import { sendTraffic } from './pipeline.js';

export interface AgentWorld {
  t: TestDatabase;
  app: FastifyInstance;
  /** Workspace A's program, with traffic; B is another workspace's program. */
  a: TestProgram;
  b: TestProgram;
  keys: { a: string; aId: number; b: string; readOnly: string };
  deliver(): Promise<void>;
}

export async function agentWorld(kind: DatabaseKind, warehouse: Warehouse, journeys = 8): Promise<AgentWorld> {
  const t = await createTestDatabase(kind);
  // Program ids of the two databases never meet in the shared warehouse.
  if (kind === 'postgres') await t.db.many(sql('t.agent_program_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 2000000`));
  const app = await buildTestApp(t.db, unlimitedRateLimits(), undefined, warehouse);
  const a = await createTestProgram(app, t.db, { paymentTrackingMode: 's2s' });
  const b = await createTestProgram(app, t.db);
  await sendTraffic(app, [a, b], journeys);
  const full = await issueAgentKey(t.db, a.workspace.workspaceId, 'full', AGENT_SCOPES);
  const other = await issueAgentKey(t.db, b.workspace.workspaceId, 'other', AGENT_SCOPES);
  const readOnly = await issueAgentKey(t.db, a.workspace.workspaceId, 'programs only', ['programs:read']);
  // A payout of A's commissions (issue 34), for the payout reads.
  await t.db.many(sql('t.agent_payable', `UPDATE commissions SET available_at = now() - interval '1 second' WHERE program_id = $1 AND status = 'pending'`), [a.programId]);
  await t.db.many(sql('t.agent_minimum', `UPDATE programs SET payout_minimum_minor = 1 WHERE id = $1`), [a.programId]);
  const run = await createPayouts(t.db, a.programId, new Date(), undefined, systemContext('test'));
  if (run.payouts[0]) payoutOf.set(a.programId, run.payouts[0].id);
  const deliver = () => embeddedDelivery(warehouse)(t.db);
  await deliver();
  return { t, app, a, b, keys: { a: full.agentKey, aId: full.id, b: other.agentKey, readOnly: readOnly.agentKey }, deliver };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

let reference = 0;
/** A payout of each program that has one (agentWorld makes one for A). */
const payoutOf = new Map<number, string>();

/** An example input of every operation on a program, as one flat object (the MCP tool's arguments). */
export function exampleArguments(op: AgentOperation, program: TestProgram): Record<string, unknown> {
  const id = program.programId;
  switch (op.name) {
    case 'list_programs':
      return {};
    case 'get_performance':
    case 'get_program_summary':
      return { programId: id, period: '30d' };
    case 'get_top_partners':
      return { programId: id, limit: 5 };
    case 'list_sales':
    case 'list_commissions':
    case 'list_partners':
    case 'list_clicks':
      return { programId: id, limit: 3 };
    case 'create_partner':
      reference += 1;
      return { programId: id, name: 'Agent partner', aff_code: `agent-${id}-${Date.now().toString(36)}-${reference}` };
    case 'set_link_enabled':
      return { programId: id, affCode: program.affCode, enabled: true };
    case 'get_partner_balance':
      return { programId: id, partnerId: program.partnerId };
    case 'list_ledger_entries':
      return { programId: id, partnerId: program.partnerId, limit: 3 };
    case 'list_payouts':
      return { programId: id, limit: 3 };
    case 'get_payout':
      return { programId: id, payoutId: payoutOf.get(id) ?? '00000000-0000-4000-8000-000000000000' };
    case 'get_statement':
      return { programId: id, period: new Date().toISOString().slice(0, 7) };
    case 'run_test_event':
      reference += 1;
      return { programId: id, event_type: 'lead', reference: `ref-${reference}` };
    default:
      return { programId: id };
  }
}

/** The HTTP request of an operation with flat arguments: path parameters filled in, GET fields as the query string. */
export function httpRequest(op: AgentOperation, args: Record<string, unknown>) {
  let path = op.path;
  const rest: Record<string, unknown> = { ...args };
  for (const [name, value] of Object.entries(args)) {
    if (path.includes(`:${name}`)) {
      path = path.replace(`:${name}`, encodeURIComponent(String(value)));
      delete rest[name];
    }
  }
  const url = `/api/agent/v1${path}`;
  if (op.method === 'GET') {
    const qs = new URLSearchParams(Object.entries(rest).map(([k, v]): [string, string] => [k, String(v)])).toString();
    return { method: op.method, url: qs ? `${url}?${qs}` : url };
  }
  return { method: op.method, url, payload: rest };
}

export const operationsOnPrograms = OPERATIONS.filter((op) => op.path.includes(':programId'));
export const scopeLacking = (scope: AgentScope) => AGENT_SCOPES.filter((s) => s !== scope);

/** Rows of every table an agent call could write, to prove a refused call wrote nothing. */
export interface AgentWriteCounts {
  audit: number;
  partners: number;
  partner_programs: number;
  links: number;
  enabled_links: number;
  tracking_logs: number;
  outbox: number;
  sales: number;
  commissions: number;
  fees: number;
  refunds: number;
  /** Money moves (issue 34): no agent operation writes any. */
  ledger_entries: number;
  payouts: number;
  approved: number;
}

export async function agentWriteCounts(db: Database): Promise<AgentWriteCounts> {
  const counts = await db.one<AgentWriteCounts>(
    sql(
      't.agent_write_counts',
      `SELECT (SELECT count(*) FROM agent_audit_log)::int AS audit, (SELECT count(*) FROM partners)::int AS partners,
              (SELECT count(*) FROM partner_programs)::int AS partner_programs, (SELECT count(*) FROM referral_links)::int AS links,
              (SELECT count(*) FROM referral_links WHERE enabled)::int AS enabled_links, (SELECT count(*) FROM tracking_logs)::int AS tracking_logs,
              (SELECT count(*) FROM outbox)::int AS outbox, (SELECT count(*) FROM sale_events)::int AS sales,
              (SELECT count(*) FROM commissions)::int AS commissions, (SELECT count(*) FROM platform_fees)::int AS fees,
              (SELECT count(*) FROM refunds)::int AS refunds, (SELECT count(*) FROM ledger_entries)::int AS ledger_entries,
              (SELECT count(*) FROM payouts)::int AS payouts, (SELECT count(*) FROM commissions WHERE status <> 'pending')::int AS approved`,
    ),
  );
  return counts!;
}
