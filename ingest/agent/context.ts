import type { FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import type { Principal } from '../../domain/access/access.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import type { AgentContext, AgentOperation } from './operations.js';

interface ContextDeps {
  db: Database;
  warehouse?: Warehouse;
  clock: () => number;
}

type AgentPrincipal = Extract<Principal, { kind: 'agentKey' }>;

export const agentPrincipalOf = (request: FastifyRequest): AgentPrincipal => {
  if (request.principal?.kind !== 'agentKey') throw new Error('agent routes run with an agent key');
  return request.principal;
};

/**
 * The permission check of an operation (the 'agent' row of the requirement table): the program of
 * the path must be in the key's workspace (else 404, as for an unknown program) and the key must
 * carry the operation's scope (else 403 naming it). Then the operation's context.
 */
export async function operationContext(auth: Auth, deps: ContextDeps, request: FastifyRequest, op: AgentOperation, programId: number | undefined): Promise<AgentContext> {
  const principal = agentPrincipalOf(request);
  const program = programId === undefined ? undefined : await auth.checkProgram(request, 'agent', op.scope, programId);
  if (programId === undefined) await auth.checkWorkspace(request, 'agent', op.scope, principal.workspaceId);
  return {
    db: deps.db,
    warehouse: deps.warehouse,
    clock: deps.clock,
    actor: { keyId: Number(principal.keyId), workspaceId: principal.workspaceId },
    audit: auditContextOf(request),
    program,
  };
}

