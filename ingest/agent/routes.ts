import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { createAuth, presentedKeyId } from '../http/auth.js';
import type { FailedAuthThrottle } from '../http/auth/failed-auth.js';
import { PlatformError, TypedError } from '../http/schemas.js';
import { credentialRateLimit } from '../http/credential-rate-limit.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { mcpRoutes } from './mcp.js';
import { operationContext } from './context.js';
import { OPERATIONS, type OperationInput } from './operations.js';

export interface AgentDeps {
  /** Counts failed key and token lookups per client address (ingest/http/auth/failed-auth.ts). */
  authThrottle: FailedAuthThrottle;
  db: Database;
  warehouse?: Warehouse;
  rateLimits: RateLimitStore;
  clock: () => number;
}

/** Requests a minute per agent key, HTTP routes and MCP calls together (ours; the spec gives none). */
export const AGENT_RATE_LIMIT = 120;

const security = [{ agentKey: [] }];
const errors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 429: TypedError, 500: PlatformError };

/**
 * The agent API under /api/agent/v1 (issue 13): one HTTP route per operation of
 * ./agent/operations.ts, and the MCP server at /mcp serving the same operations as tools. Only an
 * agent key (`agt_`) authenticates; every call counts against the key's rate limit.
 */
export const agentRoutes: FastifyPluginAsync<AgentDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db: deps.db, throttle: deps.authThrottle });
  const limit = credentialRateLimit(deps.rateLimits, { bucket: 'agent', limit: AGENT_RATE_LIMIT, credentialOf: presentedKeyId }, fastify.log, deps.clock);
  // Rate limit first: a refused request reaches neither the endpoint nor, once its key is known, the key lookup.
  const onRequest = [limit.beforeAuth, auth.authenticate('agent'), limit.afterAuth];

  for (const op of OPERATIONS) {
    app.route({
      method: op.method,
      url: op.path,
      config: { surface: 'agent' },
      onRequest,
      schema: {
        summary: op.summary,
        description: `Scope: \`${op.scope}\`. MCP tool: \`${op.name}\`.`,
        tags: ['agent'],
        security,
        ...(op.params && { params: op.params }),
        ...(op.query && { querystring: op.query }),
        ...(op.body && { body: op.body }),
        response: { 200: op.response, ...errors },
      },
      async handler(request) {
        const input = { params: request.params ?? {}, query: request.query ?? {}, body: request.body ?? {} } as OperationInput<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>>;
        const programId = input.params.programId as number | undefined;
        const ctx = await operationContext(auth, deps, request, op, programId);
        return op.run(ctx, input);
      },
    });
  }

  await mcpRoutes(app, { ...deps, auth, onRequest });
};
