/**
 * One delivery attempt over HTTP (issue 32, points 2 and 5): signed per the Standard Webhooks
 * specification with its reference library (`standardwebhooks`), sent only to a public address
 * unless private ones are allowed. The host is resolved, every address it gives is checked, and the
 * connection goes to the checked address (the socket's own lookup: a DNS answer that changes
 * between the check and the connect cannot move it); an address literal is checked before any
 * connection. No redirect is followed (a 3xx is a failed attempt), each attempt has one deadline,
 * connecting included, and at most a few KiB of the answer are read.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import { firstRefused, literalAddress, type Resolver } from '../../core/outbound-address.js';

/** How much of a receiver's answer is read, and kept in the delivery log. */
export const MAX_RESPONSE_BYTES = 4_096;
const MAX_ERROR_CHARS = 500;
const AGENT_IDLE_MS = 5 * 60_000;

export interface SenderOptions {
  /** WEBHOOK_ALLOW_PRIVATE_URLS: private addresses and http:// allowed (tests, local use). */
  allowPrivate: boolean;
  resolve: Resolver;
  /** One attempt's deadline, connecting included. */
  timeoutMs: number;
  /** Connections per endpoint (the worker's per-endpoint concurrency). */
  maxSocketsPerEndpoint: number;
  /** Extra trusted certificate authorities (tests' local HTTPS receivers). */
  ca?: string | Buffer;
  now?: () => Date;
}

export interface Attempt {
  endpointId: string;
  url: string;
  /** The webhook's id (schemas/webhooks.ts, webhookIdOf): the webhook-id header, the same on every attempt. */
  messageId: string;
  body: string;
  /** Every secret that signs: the current one, and the previous one during a rotation. */
  secrets: readonly string[];
}

export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
}

/** A connection refused by the address policy (the attempt's error names the address and its class). */
export class RefusedAddressError extends Error {
  readonly code = 'EREFUSEDADDRESS';
}

function refusedIn(addresses: readonly string[]): RefusedAddressError | undefined {
  const refused = firstRefused(addresses);
  return refused && new RefusedAddressError(`refused address: ${refused.address} is ${refused.class}`);
}

/** The socket's lookup: resolve, refuse the host if any of its addresses is refused, connect to a checked one. */
function guardedLookup(resolve: Resolver, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const addresses = options.family === 4 || options.family === 6 ? all.filter((a) => isIP(a) === options.family) : all;
        const refused = allowPrivate ? undefined : refusedIn(all);
        if (refused) return callback(refused, '', 0);
        if (addresses.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        const entries = addresses.map((address) => ({ address, family: isIP(address) }));
        if (options.all) return (callback as unknown as (e: null, a: typeof entries) => void)(null, entries);
        callback(null, entries[0]!.address, entries[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/** Text a Postgres column can hold: no NUL, no lone surrogate. */
const storable = (text: string) => text.replaceAll('\u0000', '').toWellFormed();

const describe = (error: unknown) => {
  const e = error as NodeJS.ErrnoException;
  return storable(`${e.code ? `${e.code}: ` : ''}${e.message ?? String(error)}`).slice(0, MAX_ERROR_CHARS);
};

export interface Sender {
  send(attempt: Attempt): Promise<AttemptOutcome>;
  /** Closes the kept-alive connections. */
  close(): void;
}

export function createSender(options: SenderOptions): Sender {
  const now = options.now ?? (() => new Date());
  const lookup = guardedLookup(options.resolve, options.allowPrivate);
  const agents = new Map<string, { agent: http.Agent; usedAt: number }>();

  function agentFor(endpointId: string, url: URL): http.Agent {
    const key = `${endpointId} ${url.protocol}//${url.host}`;
    const found = agents.get(key);
    if (found) {
      found.usedAt = Date.now();
      return found.agent;
    }
    const settings = { keepAlive: true, maxSockets: options.maxSocketsPerEndpoint, lookup };
    const agent = url.protocol === 'https:' ? new https.Agent({ ...settings, ca: options.ca }) : new http.Agent(settings);
    agents.set(key, { agent, usedAt: Date.now() });
    return agent;
  }

  // Agents of endpoints not sent to for a while are closed.
  const sweep = setInterval(() => {
    const idleSince = Date.now() - AGENT_IDLE_MS;
    for (const [key, entry] of agents) {
      if (entry.usedAt < idleSince) {
        entry.agent.destroy();
        agents.delete(key);
      }
    }
  }, 60_000).unref();

  function signature(attempt: Attempt, at: Date): string {
    return attempt.secrets
      // A signer is the secret's key decoded: built per attempt, so no secret outlives its attempt in memory.
      .map((secret) => new Webhook(secret).sign(attempt.messageId, at, attempt.body))
      .join(' ');
  }

  /** Why the URL may not be sent to now, before any connection (the address policy may have changed since it was created). */
  function refusedUrl(url: URL): string | undefined {
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowPrivate)) return `only https URLs are sent to (${url.protocol})`;
    const literal = literalAddress(url.hostname);
    if (literal && !options.allowPrivate) return refusedIn([literal])?.message;
    return undefined;
  }

  function send(attempt: Attempt): Promise<AttemptOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const url = new URL(attempt.url);
    const refused = refusedUrl(url);
    if (refused) return Promise.resolve({ ok: false, statusCode: null, durationMs: 0, responseBody: null, error: refused });
    const at = now();
    const body = Buffer.from(attempt.body, 'utf8');
    const headers = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': 'affiliate-tracking-webhooks/1',
      'webhook-id': attempt.messageId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature(attempt, at),
    };
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: Omit<AttemptOutcome, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ ...outcome, durationMs: elapsed() });
      };
      const request = client.request(url, { method: 'POST', headers, agent: agentFor(attempt.endpointId, url), lookup }, (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const text = storable(Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8'));
          const status = response.statusCode ?? 0;
          finish({ ok: status >= 200 && status < 300, statusCode: status, responseBody: text, error: null });
        };
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          // Enough of the answer for the log: the rest is not read (the connection is dropped).
          if (size >= MAX_RESPONSE_BYTES) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', (error) => finish({ ok: false, statusCode: response.statusCode ?? null, responseBody: null, error: describe(error) }));
      });
      const deadline = setTimeout(() => request.destroy(Object.assign(new Error(`no answer within ${options.timeoutMs} ms`), { code: 'ETIMEDOUT' })), options.timeoutMs);
      request.on('error', (error) => finish({ ok: false, statusCode: null, responseBody: null, error: describe(error) }));
      request.end(body);
    });
  }

  return {
    send,
    close() {
      clearInterval(sweep);
      for (const { agent } of agents.values()) agent.destroy();
      agents.clear();
    },
  };
}
