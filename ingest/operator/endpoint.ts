/**
 * The operator's endpoint, served by the process that holds the embedded database (PGlite is a
 * directory one process opens: while the service runs, `npm run ops` cannot open it, and a copy
 * it opened anyway would write sessions the service never sees). Its own loopback port, never the
 * public API; the same commands as the script (commands.ts).
 *
 * Authentication as the SQL endpoint's (queries/analytics/endpoint.ts): a random token made at
 * start, of which the process keeps only the SHA-256; the token and the address are written to
 * <DATA_DIR>/ops-endpoint.json (mode 0600), where `npm run ops` reads them. Whoever can read that
 * file can read the data directory anyway.
 *
 *   POST /ops  Authorization: Bearer <token>  {"command": "create-session", "args": ["1", "a@b.example"]}
 *   200 {"lines": [...]}; 400 {"error": {"message"}} (the usage, or why the command refused); 401 bad token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { runOperatorCommand } from './commands.js';

export const OPS_ENDPOINT_FILE = 'ops-endpoint.json';

export const OpsEndpointFile = z.object({ pid: z.number().int(), url: z.url(), token: z.string().min(20) });
export type OpsEndpointFile = z.infer<typeof OpsEndpointFile>;

const Body = z.object({ command: z.string().min(1).max(64), args: z.array(z.string().max(1_000)).max(10).default([]) });
const MAX_BODY_BYTES = 16_384;

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

export interface OpsEndpoint {
  url: string;
  close(): Promise<void>;
}

export async function serveOpsEndpoint(deps: { db: Database; dataDir: string; logger: Logger }): Promise<OpsEndpoint> {
  const token = randomBytes(32).toString('base64url');
  const tokenHash = hash(token);
  const server = createServer((req, res) => {
    const json = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const refuse = (status: number, message: string) => json(status, { error: { message } });
    void (async () => {
      if ((req.url ?? '/').split('?')[0] !== '/ops' || req.method !== 'POST') return refuse(404, 'Not found: POST /ops');
      const presented = /^Bearer ([A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!presented || !timingSafeEqual(hash(presented), tokenHash)) {
        return refuse(401, `A valid operator token is required (the one in ${join(deps.dataDir, OPS_ENDPOINT_FILE)})`);
      }
      const text = await readBody(req);
      if (text === undefined) return refuse(413, `The request body is over ${MAX_BODY_BYTES} bytes`);
      let parsed: z.infer<typeof Body>;
      try {
        parsed = Body.parse(JSON.parse(text));
      } catch {
        return refuse(400, 'Send JSON: {"command": "<name>", "args": ["..."]}');
      }
      try {
        const lines = await runOperatorCommand(deps.db, parsed.command, parsed.args);
        // The command's name only: its output may hold a token.
        deps.logger.info({ command: parsed.command }, 'operator command run through the running service');
        return json(200, { lines });
      } catch (error) {
        return refuse(400, (error as Error).message);
      }
    })().catch((error: unknown) => {
      deps.logger.error({ err: error }, 'operator endpoint request failed');
      if (!res.headersSent) refuse(500, 'Internal error; see the service log');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const file = join(deps.dataDir, OPS_ENDPOINT_FILE);
  const record: OpsEndpointFile = { pid: process.pid, url, token };
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The running service's operator endpoint, or undefined when no service holds the data directory (a stale file is ignored). */
export async function runningOpsEndpoint(dataDir: string): Promise<OpsEndpointFile | undefined> {
  const file = join(dataDir, OPS_ENDPOINT_FILE);
  if (!existsSync(file)) return undefined;
  const record = OpsEndpointFile.safeParse(JSON.parse(await readFile(file, 'utf8')));
  if (!record.success) throw new Error(`${file} is not an operator endpoint record; remove it if no service runs`);
  return alive(record.data.pid) ? record.data : undefined;
}

/** Runs a command through the running service; its output lines, or an Error with the service's refusal. */
export async function runThroughService(endpoint: OpsEndpointFile, command: string | undefined, args: string[]): Promise<string[]> {
  let res: Response;
  try {
    res = await fetch(`${endpoint.url}/ops`, {
      method: 'POST',
      headers: { authorization: `Bearer ${endpoint.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: command ?? '', args }),
    });
  } catch (error) {
    throw new Error(
      `The service (pid ${endpoint.pid}) holds the embedded database, and its operator endpoint ${endpoint.url} did not answer ` +
        `(${(error as Error).message}). Stop the service and run the command again.`,
    );
  }
  const answer = (await res.json().catch(() => ({}))) as { lines?: string[]; error?: { message?: string } };
  if (!res.ok) throw new Error(answer.error?.message ?? `The operator endpoint answered ${res.status}`);
  return answer.lines ?? [];
}
