/**
 * The agent's read of a program's audit log (issue 32, point 6; scope `audit:read`): the console
 * route's query, page and views (ingest/audit/schemas.ts), served as an HTTP route and an MCP tool
 * like every operation of operations.ts.
 */
import type { z } from 'zod';
import { auditPage } from '../../domain/audit/log.js';
import { AuditPage, AuditQuery, auditPageBody } from '../audit/schemas.js';
import type { AgentOperation } from './operations.js';
import { ProgramParams } from './schemas.js';

const define = <P extends z.ZodType<Record<string, unknown>>, Q extends z.ZodType<Record<string, unknown>>>(op: AgentOperation<P, Q>) => op as unknown as AgentOperation;

export const AUDIT_OPERATIONS: readonly AgentOperation[] = [
  define({
    name: 'list_audit_log',
    summary: "The program's audit log, newest first: who changed what (settings, terms, keys, partners, webhook endpoints, team, money), with before and after",
    method: 'GET',
    path: '/programs/:programId/audit-log',
    scope: 'audit:read',
    params: ProgramParams,
    query: AuditQuery,
    response: AuditPage,
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
    async run(ctx, { query }) {
      return auditPageBody(await auditPage(ctx.db, ctx.program!.id, { limit: query.limit, after: query.cursor }));
    },
  }),
];
