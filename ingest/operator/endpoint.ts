/**
 * The operator's endpoint, served by the process that holds the embedded database (PGlite is a
 * directory one process opens: while the service runs, `npm run ops` cannot open it, and a copy
 * it opened anyway would write sessions the service never sees). Its own loopback port, never the
 * public API; the same commands as the script (commands.ts).
 *
 * Authentication as the SQL endpoint's (core/operator-endpoint.ts): the token and the address are
 * in <DATA_DIR>/ops-endpoint.json (mode 0600), where `npm run ops` reads them.
 *
 *   POST /ops  Authorization: Bearer <token>  {"command": "create-session", "args": ["1", "a@b.example"]}
 *   200 {"lines": [...]}; 400 {"error": {"message"}} (the usage, or why the command refused); 401 bad token.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { listenAndPublish, liveEndpointRecord, operatorToken, readBody, sendJson, type EndpointRecord, type OperatorEndpoint } from '../../core/operator-endpoint.js';
import { runOperatorCommand } from './commands.js';

export const OPS_ENDPOINT_FILE = 'ops-endpoint.json';

const Body = z.object({ command: z.string().min(1).max(64), args: z.array(z.string().max(1_000)).max(10).default([]) });
const MAX_BODY_BYTES = 16_384;

export async function serveOpsEndpoint(deps: { db: Database; dataDir: string; logger: Logger }): Promise<OperatorEndpoint> {
  const token = operatorToken();
  const server = createServer((req, res) => {
    const refuse = (status: number, message: string) => sendJson(res, status, { error: { message } });
    void (async () => {
      if ((req.url ?? '/').split('?')[0] !== '/ops' || req.method !== 'POST') return refuse(404, 'Not found: POST /ops');
      if (!token.presentedBy(req)) {
        return refuse(401, `A valid operator token is required (the one in ${join(deps.dataDir, OPS_ENDPOINT_FILE)})`);
      }
      const text = await readBody(req, MAX_BODY_BYTES);
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
        return sendJson(res, 200, { lines });
      } catch (error) {
        return refuse(400, (error as Error).message);
      }
    })().catch((error: unknown) => {
      deps.logger.error({ err: error }, 'operator endpoint request failed');
      if (!res.headersSent) refuse(500, 'Internal error; see the service log');
    });
  });
  return listenAndPublish(server, { host: '127.0.0.1', port: 0, recordFile: join(deps.dataDir, OPS_ENDPOINT_FILE), token: token.value });
}

/** The running service's operator endpoint, or undefined when no service holds the data directory (a stale file is ignored). */
export async function runningOpsEndpoint(dataDir: string): Promise<EndpointRecord | undefined> {
  const file = join(dataDir, OPS_ENDPOINT_FILE);
  if (!existsSync(file)) return undefined;
  return liveEndpointRecord(await readFile(file, 'utf8'), () => new Error(`${file} is not an operator endpoint record; remove it if no service runs`));
}

/** Runs a command through the running service; its output lines, or an Error with the service's refusal. */
export async function runThroughService(endpoint: EndpointRecord, command: string | undefined, args: string[]): Promise<string[]> {
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
