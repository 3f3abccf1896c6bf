/**
 * The operator's SQL endpoint, served by the process that holds the embedded warehouse (chDB is a
 * directory one process opens: while the service runs, `npm run sql` cannot open it and asks this
 * process instead). Its own port, loopback by default (SQL_HOST, SQL_PORT), never the public API.
 *
 * Authentication: a random token made at start. The process keeps only its SHA-256 hash; the
 * token itself is written, with the address, to <DATA_DIR>/sql-endpoint.json (mode 0600), where
 * the operator's `npm run sql` reads it; whoever can read that file can read the data directory
 * anyway. The file also tells `npm run sql` that the service runs (see target.ts).
 *
 *   POST /sql  Authorization: Bearer <token>  {"query": "...", "params": {...}, "format": "csv"}
 *   200 the bytes in that format; 400 {"error": {"reason", "message"}}; 401 bad or no token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AnalyticsConfig } from '../../core/config.js';
import type { Warehouse } from '../../core/warehouse.js';
import { OUTPUT_FORMATS, QueryRefused, type OutputFormat } from './guard.js';
import { QueryFailed, runAnalyticsQuery, warehouseAccess } from './run.js';

export const ENDPOINT_FILE = 'sql-endpoint.json';

/** What the running process writes for `npm run sql`. */
export const EndpointFile = z.object({ pid: z.number().int(), url: z.url(), token: z.string().min(20) });
export type EndpointFile = z.infer<typeof EndpointFile>;

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

const hash = (token: string) => createHash('sha256').update(token).digest();

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export interface SqlEndpoint {
  url: string;
  close(): Promise<void>;
}

export async function serveSqlEndpoint(deps: { warehouse: Warehouse; config: AnalyticsConfig; dataDir: string; logger: Logger }): Promise<SqlEndpoint> {
  const token = randomBytes(32).toString('base64url');
  const tokenHash = hash(token);
  const access = warehouseAccess(deps.warehouse);
  const server = createServer((req, res) => {
    const json = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const refuse = (status: number, reason: string, message: string) => json(status, { error: { reason, message } });
    void (async () => {
      if ((req.url ?? '/').split('?')[0] !== '/sql') return refuse(404, 'not_found', 'Not found: POST /sql');
      if (req.method !== 'POST') return refuse(405, 'method_not_allowed', 'Use POST /sql');
      const presented = /^Bearer ([A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!presented || !timingSafeEqual(hash(presented), tokenHash)) {
        return refuse(401, 'unauthorized', `A valid operator token is required (the one in ${join(deps.dataDir, ENDPOINT_FILE)})`);
      }
      const text = await readBody(req);
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.endpoint.port, deps.config.endpoint.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = deps.config.endpoint.host.includes(':') ? `[${deps.config.endpoint.host}]` : deps.config.endpoint.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const file = join(deps.dataDir, ENDPOINT_FILE);
  const record: EndpointFile = { pid: process.pid, url, token };
  // Removed first: the mode applies only to a file this call creates.
  await rm(file, { force: true });
  await writeFile(file, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
  return {
    url,
    async close() {
      await rm(file, { force: true });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
