import type { FastifyRequest } from 'fastify';
import { actorOf, type AuditContext } from '../../domain/audit/audit.js';

/** Who writes and which request asked, for the audit entry of a domain write (domain/audit/audit.ts). */
export function auditContextOf(request: FastifyRequest): AuditContext {
  if (!request.principal) throw new Error('an audited write runs with a principal');
  return { actor: actorOf(request.principal), requestId: String(request.id) };
}
