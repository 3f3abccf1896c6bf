/**
 * The agent's read of a program's commission rule versions (issue 30; scope `commissions:read`):
 * the console route's view (ingest/terms/), served as an HTTP route and an MCP tool like every
 * operation of operations.ts.
 */
import { z } from 'zod';
import { listRuleVersions } from '../../domain/programs/terms.js';
import { versionOut } from '../terms/rules.js';
import { RuleVersionOut } from '../terms/schemas.js';
import type { AgentOperation } from './operations.js';
import { EmptyQuery, ProgramParams } from './schemas.js';

const define = <P extends z.ZodType<Record<string, unknown>>, Q extends z.ZodType<Record<string, unknown>>>(op: AgentOperation<P, Q>) => op as unknown as AgentOperation;

export const TERMS_OPERATIONS: readonly AgentOperation[] = [
  define({
    name: 'list_commission_rules',
    summary: "The program's commission rule versions and its groups', oldest first: terms, effective_from, who changed them (the rule_version commissions record)",
    method: 'GET',
    path: '/programs/:programId/commission-rules',
    scope: 'commissions:read',
    params: ProgramParams,
    query: EmptyQuery,
    response: z.object({ data: z.array(RuleVersionOut) }),
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
    async run(ctx) {
      return { data: (await listRuleVersions(ctx.db, ctx.program!.id)).map(versionOut) };
    },
  }),
];
