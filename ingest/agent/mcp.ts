/**
 * The MCP server at /api/agent/v1/mcp (issue 13): the official SDK's McpServer over its Streamable
 * HTTP transport, stateless (a new server and transport per request, no session id), serving the
 * operations of ./operations.ts as tools. tools/list shows only the tools the key's scopes allow;
 * each call runs the same permission check and the same `run` as the HTTP route.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import type { Auth } from '../http/auth.js';
import { ApiError, answerTo } from '../http/errors.js';
import { M } from '../http/messages.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import { PlatformError, TypedError } from '../http/schemas.js';
import { agentPrincipalOf, operationContext } from './context.js';
import { OPERATIONS, type AgentOperation, type OperationInput } from './operations.js';

export const MCP_SERVER_INFO = { name: 'affiliate-tracking-agent', version: '1.0.0' };

interface McpDeps {
  db: Database;
  warehouse?: Warehouse;
  rateLimits: RateLimitStore;
  clock: () => number;
  auth: Auth;
  onRequest: onRequestHookHandler[];
}

type Part = 'params' | 'query' | 'body';
const PARTS: readonly Part[] = ['params', 'query', 'body'];

const shapeOf = (schema: z.ZodType | undefined): z.ZodRawShape => (schema instanceof z.ZodObject ? (schema.shape as z.ZodRawShape) : {});

/** One flat input object: the path parameters, query and body fields of the HTTP route, with their own schemas. */
export function toolInputSchema(op: AgentOperation) {
  return z.strictObject(Object.assign({}, ...PARTS.map((part) => shapeOf(op[part]))) as z.ZodRawShape);
}

/**
 * The raw arguments of each tools/call in the request, by JSON-RPC id. The SDK hands a tool its
 * arguments already parsed by the flat schema; the HTTP route's own part schemas (with their
 * cross-field checks, such as from before to) are then applied to what the client sent.
 */
function rawArguments(body: unknown): Map<string | number, Record<string, unknown>> {
  const byId = new Map<string | number, Record<string, unknown>>();
  for (const message of Array.isArray(body) ? body : [body]) {
    const m = message as { method?: unknown; id?: unknown; params?: { arguments?: unknown } } | null;
    if (m?.method === 'tools/call' && (typeof m.id === 'string' || typeof m.id === 'number')) {
      const args = m.params?.arguments;
      byId.set(m.id, args && typeof args === 'object' ? (args as Record<string, unknown>) : {});
    }
  }
  return byId;
}

function splitInput(op: AgentOperation, raw: Record<string, unknown>): OperationInput<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>> {
  const input = { params: {}, query: {}, body: {} } as Record<Part, Record<string, unknown>>;
  for (const part of PARTS) {
    const schema = op[part];
    if (!schema) continue;
    const keys = Object.keys(shapeOf(schema));
    const picked = Object.fromEntries(Object.entries(raw).filter(([k]) => keys.includes(k)));
    const parsed = schema.safeParse(picked);
    if (!parsed.success) throw new ApiError(400, parsed.error.issues[0]?.message ?? M.body.badRequest);
    input[part] = parsed.data;
  }
  return input as OperationInput<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>>;
}

/** A tool's answer: the HTTP route's body, as structured content and as JSON text. */
const toolResult = (body: object, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(body) }],
  structuredContent: body as Record<string, unknown>,
  ...(isError && { isError: true }),
});

function buildServer(deps: McpDeps, request: FastifyRequest): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, { capabilities: { tools: {} } });
  const scopes = agentPrincipalOf(request).scopes;
  const raw = rawArguments(request.body);
  for (const op of OPERATIONS) {
    if (!scopes.includes(op.scope)) continue;
    server.registerTool(
      op.name,
      {
        title: op.summary,
        description: `${op.summary}. Same as ${op.method} /api/agent/v1${op.path}; scope ${op.scope}.`,
        inputSchema: toolInputSchema(op),
        annotations: { ...op.annotations, openWorldHint: false },
      },
      async (_args: unknown, extra: { requestId: string | number }) => {
        try {
          const input = splitInput(op, raw.get(extra.requestId) ?? {});
          const ctx = await operationContext(deps.auth, deps, request, op, input.params.programId as number | undefined);
          return toolResult(await op.run(ctx, input));
        } catch (error) {
          // The HTTP route's answer, envelope and message included (404 for another workspace's ids).
          const { apiError, body } = answerTo(error, 'agent');
          if (apiError.status >= 500) request.log.error({ err: error, tool: op.name }, 'agent tool failed');
          else request.log.warn({ status: apiError.status, reason: apiError.message, tool: op.name }, 'agent tool refused');
          return toolResult(body, true);
        }
      },
    );
  }
  return server;
}

export async function mcpRoutes(app: FastifyInstance, deps: McpDeps) {
  app.post(
    '/mcp',
    {
      config: { surface: 'agent' },
      onRequest: deps.onRequest,
      schema: {
        summary: 'MCP server (Streamable HTTP, stateless): the agent operations as tools, listed by the key scopes',
        tags: ['agent'],
        security: [{ agentKey: [] }],
        body: z.unknown().describe('A JSON-RPC message or batch of the Model Context Protocol'),
        response: { 400: PlatformError, 401: PlatformError, 429: TypedError, 500: PlatformError },
      },
    },
    async (request, reply) => {
      const server = buildServer(deps, request);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // The transport writes the raw response: carry over the headers hooks set (request id, rate limit).
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value as string);
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    },
  );

  // Stateless: no server-sent event stream to resume and no session to end.
  const notAllowed = { config: { surface: 'agent' as const }, onRequest: deps.onRequest, schema: { hide: true } };
  const methodNotAllowed = async (_request: FastifyRequest, reply: import('fastify').FastifyReply) =>
    reply
      .status(405)
      .header('Allow', 'POST')
      .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP server is stateless; POST JSON-RPC messages' }, id: null });
  app.get('/mcp', notAllowed, methodNotAllowed);
  app.delete('/mcp', notAllowed, methodNotAllowed);
}
