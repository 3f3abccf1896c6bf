/**
 * What the operator's loopback endpoints share (the SQL endpoint, queries/analytics/endpoint.ts,
 * and the ops endpoint, ingest/operator/endpoint.ts): the process that holds an embedded data
 * directory answers the operator's commands, since a second process may not open that directory.
 *
 * Authentication: a random token made at start, of which the process keeps only the SHA-256; the
 * token and the address are written to a record in the data directory (mode 0600), where the
 * operator's command reads them. Whoever can read that file can read the data directory anyway.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/** What the running process writes for the operator's command. */
export const EndpointRecord = z.object({ pid: z.number().int(), url: z.url(), token: z.string().min(20) });
export type EndpointRecord = z.infer<typeof EndpointRecord>;

const hash = (token: string) => createHash('sha256').update(token).digest();

/** A token made at start; only its hash stays in memory. */
export function operatorToken(): { value: string; presentedBy(req: IncomingMessage): boolean } {
  const value = randomBytes(32).toString('base64url');
  const tokenHash = hash(value);
  return {
    value,
    presentedBy(req) {
      const presented = /^Bearer ([A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1];
      return presented !== undefined && timingSafeEqual(hash(presented), tokenHash);
    },
  };
}

/** The body as text, or undefined when it is over maxBytes. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

export interface OperatorEndpoint {
  url: string;
  close(): Promise<void>;
}

/** Listens on host:port, then writes the record the operator's command finds the endpoint by; close removes it. */
export async function listenAndPublish(server: Server, options: { host: string; port: number; recordFile: string; token: string }): Promise<OperatorEndpoint> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const record: EndpointRecord = { pid: process.pid, url, token: options.token };
  // Removed first: the mode applies only to a file this call creates.
  await rm(options.recordFile, { force: true });
  await writeFile(options.recordFile, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
  return {
    url,
    async close() {
      await rm(options.recordFile, { force: true });
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

/** The record in `text` while its process runs, undefined once it is gone (a stale file); `notARecord` when the text is no record. */
export function liveEndpointRecord(text: string, notARecord: () => Error): EndpointRecord | undefined {
  const record = EndpointRecord.safeParse(JSON.parse(text));
  if (!record.success) throw notARecord();
  return alive(record.data.pid) ? record.data : undefined;
}
