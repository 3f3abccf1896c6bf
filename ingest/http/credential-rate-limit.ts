import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { rateCounter, type RateBudget, type RateLimitStore } from './rate-limit.js';

export interface CredentialRule extends RateBudget {
  /** The presented credential's id (its hash, never the secret); undefined when none is presented. */
  credentialOf(request: FastifyRequest): string | undefined;
  /** How many credentials found valid are remembered (the oldest forgotten first). */
  maxKnown?: number;
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/**
 * A budget per credential ("API key, IP when no key") that no one can multiply by inventing
 * credentials. A credential is counted as itself only once it is known to be real; until then its
 * request counts against the client address, and, once authentication accepted it, against the
 * credential too. So a random token costs its sender's address a request and adds no key to the
 * store, a real credential is counted exactly from its first request, and a known one over its
 * limit is refused before any lookup.
 */
export interface CredentialRateLimit {
  /** onRequest, before the authentication hook. */
  beforeAuth: Hook;
  /** After the authentication hook accepted the request (onRequest after it, or preParsing). */
  afterAuth: Hook;
  /** A credential found valid elsewhere than in an authentication hook (the CLI's poll secret). */
  remember(id: string): void;
}

export const MAX_KNOWN_CREDENTIALS = 10_000;

export function credentialRateLimit(store: RateLimitStore, rule: CredentialRule, log: FastifyBaseLogger, now?: () => number): CredentialRateLimit {
  const count = rateCounter(store, rule, log, now);
  const maxKnown = rule.maxKnown ?? MAX_KNOWN_CREDENTIALS;
  // Insertion order is age: only authenticated callers add entries, so the bound is never reached by guessing.
  const known = new Set<string>();
  /** Requests counted against their address because their credential was not known yet. */
  const unchecked = new WeakMap<FastifyRequest, string>();

  const remember = (id: string) => {
    if (known.has(id)) return;
    if (known.size >= maxKnown) known.delete(known.values().next().value!);
    known.add(id);
  };

  return {
    beforeAuth(request, reply, done) {
      const id = rule.credentialOf(request);
      if (id !== undefined && known.has(id)) return count(reply, id, done);
      if (id !== undefined) unchecked.set(request, id);
      count(reply, `ip:${request.clientAddress}`, done);
    },
    afterAuth(request, reply, done) {
      const id = unchecked.get(request);
      if (id === undefined || request.principal === undefined) return done();
      unchecked.delete(request);
      remember(id);
      count(reply, id, done);
    },
    remember,
  };
}
