/**
 * The operator's SQL endpoint, served by the process that holds the embedded warehouse (chDB is a
 * directory one process opens: while the service runs, `npm run sql` cannot open it and asks this
 * process instead). Its own port, loopback by default (SQL_HOST, SQL_PORT), never the public API.
 *
 * Authentication (core/operator-endpoint.ts): a random token made at start, written with the
 * address to <DATA_DIR>/sql-endpoint.json (mode 0600), where the operator's `npm run sql` reads it.
 * The file also tells `npm run sql` that the service runs (see target.ts).
 *
 *   POST /sql  Authorization: Bearer <token>  {"query": "...", "params": {...}, "format": "csv"}
 *   200 the bytes in that format; 400 {"error": {"reason", "message"}}; 401 bad or no token.
 */
import { createServer } from 'node:http';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AnalyticsConfig } from '../../core/config.js';
import { listenAndPublish, operatorToken, readBody, sendJson, type OperatorEndpoint } from '../../core/operator-endpoint.js';
import type { Warehouse } from '../../core/warehouse.js';
import { OUTPUT_FORMATS, QueryRefused, type OutputFormat } from './guard.js';
import { QueryFailed, runAnalyticsQuery, warehouseAccess } from './run.js';

export const ENDPOINT_FILE = 'sql-endpoint.json';

const Body = z.object({
  query: z.string().min(1).max(1_000_000),
  params: z.record(z.string(), z.string()).default({}),
  format: z.enum(Object.keys(OUTPUT_FORMATS) as [OutputFormat, ...OutputFormat[]]).default('table'),
  /** The caller may ask for tighter limits than the configured ones, never looser. */
  maxExecutionSeconds: z.number().int().min(1).optional(),
  maxMemoryBytes: z.number().int().min(1).optional(),
});

const CONTENT_TYPES: Record<OutputFormat, string> = {
  table: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
};

const MAX_BODY_BYTES = 1_048_576;

/** The SQL endpoint while the service runs. */
export type SqlEndpoint = OperatorEndpoint;

export async function serveSqlEndpoint(deps: { warehouse: Warehouse; config: AnalyticsConfig; dataDir: string; logger: Logger }): Promise<SqlEndpoint> {
  const token = operatorToken();
  const access = warehouseAccess(deps.warehouse);
  const server = createServer((req, res) => {
    const refuse = (status: number, reason: string, message: string) => sendJson(res, status, { error: { reason, message } });
    void (async () => {
      if ((req.url ?? '/').split('?')[0] !== '/sql') return refuse(404, 'not_found', 'Not found: POST /sql');
      if (req.method !== 'POST') return refuse(405, 'method_not_allowed', 'Use POST /sql');
      if (!token.presentedBy(req)) {
        return refuse(401, 'unauthorized', `A valid operator token is required (the one in ${join(deps.dataDir, ENDPOINT_FILE)})`);
      }
      const text = await readBody(req, MAX_BODY_BYTES);
      if (text === undefined) return refuse(413, 'too_large', `The request body is over ${MAX_BODY_BYTES} bytes`);
      let parsed: z.infer<typeof Body>;
      try {
        parsed = Body.parse(JSON.parse(text));
      } catch {
        return refuse(400, 'invalid_request', 'Send JSON: {"query": "SELECT ...", "params": {}, "format": "table|csv|jsonl|parquet"}');
      }
      const limits = {
        maxExecutionSeconds: Math.min(parsed.maxExecutionSeconds ?? Infinity, deps.config.limits.maxExecutionSeconds),
        maxMemoryBytes: Math.min(parsed.maxMemoryBytes ?? Infinity, deps.config.limits.maxMemoryBytes),
      };
      const started = Date.now();
      try {
        const bytes = await runAnalyticsQuery(access, { query: parsed.query, params: parsed.params, format: parsed.format }, limits);
        deps.logger.info({ ms: Date.now() - started, bytes: bytes.length, format: parsed.format }, 'analytics query answered');
        res.writeHead(200, { 'content-type': CONTENT_TYPES[parsed.format], 'cache-control': 'no-store' });
        res.end(bytes);
      } catch (error) {
        if (error instanceof QueryRefused) return refuse(400, error.reason, error.message);
        if (error instanceof QueryFailed) return refuse(400, error.limit ? `${error.limit}_limit` : 'query_failed', error.message);
        deps.logger.error({ err: error }, 'analytics query failed');
        return refuse(500, 'internal', 'The query could not be run; see the service log');
      }
    })().catch((error: unknown) => {
      deps.logger.error({ err: error }, 'SQL endpoint request failed');
      if (!res.headersSent) refuse(500, 'internal', 'Internal error');
    });
  });
  const { host, port } = deps.config.endpoint;
  return listenAndPublish(server, { host, port, recordFile: join(deps.dataDir, ENDPOINT_FILE), token: token.value });
}
