/**
 * A brand's webhook receiver for the tests: a real HTTP (or HTTPS) server on 127.0.0.1 that keeps
 * every request it got and answers as told (status, delay, body, or not at all while down).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Behaviour {
  status: number;
  delayMs: number;
  body: string;
  headers: Record<string, string>;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  behaviour: Behaviour;
  /** Requests whose webhook-signature verifies with this secret (the reference library). */
  verified(secret: string): { id: string; type: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export function verify(secret: string, r: Received): { id: string; type: string; body: Record<string, unknown> } {
  const headers = { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) };
  const body = new Webhook(secret).verify(r.body, headers) as Record<string, unknown>;
  return { id: headers['webhook-id'], type: String(body.type), body };
}

/** A self-signed certificate for these host names (openssl), for an HTTPS receiver. */
export function selfSignedCertificate(names: string[]): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ats-cert-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${names[0]}`,
      '-addext', `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startReceiver(options: { tls?: { key: string; cert: string }; host?: string; port?: number } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const behaviour: Behaviour = { status: 200, delayMs: 0, body: 'ok', headers: {} };
  const handler: http.RequestListener = (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const answer = () => {
        response.writeHead(behaviour.status, { 'content-type': 'text/plain', ...behaviour.headers });
        response.end(behaviour.body);
      };
      if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
      else answer();
    });
  };
  const server = options.tls ? https.createServer(options.tls, handler) : http.createServer(handler);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}/hooks`,
    port,
    received,
    behaviour,
    verified: (secret) => received.map((r) => verify(secret, r)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
