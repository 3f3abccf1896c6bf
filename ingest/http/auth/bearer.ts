import type { FastifyRequest } from 'fastify';
import { hashSecret } from '../../../domain/access/secrets.js';

/** What an Authorization header holds, before any lookup. */
export type PresentedCredential =
  | { kind: 'absent' }
  | { kind: 'malformed' }
  | { kind: 'empty' }
  | { kind: 'token'; token: string };

/** Keys and tokens: `Authorization: Bearer <token>`, nothing else. */
export function parseBearer(header: string | undefined): PresentedCredential {
  if (header === undefined) return { kind: 'absent' };
  // HTTP strips a header value's trailing whitespace, so `Bearer ` with an empty token arrives as
  // `Bearer`: the scheme alone is that empty token, not a malformed header.
  if (header === 'Bearer') return { kind: 'empty' };
  if (!header.startsWith('Bearer ')) return { kind: 'malformed' };
  const token = header.slice('Bearer '.length).trim();
  return token === '' ? { kind: 'empty' } : { kind: 'token', token };
}

/** The dashboard session rides in Authorization, with or without the Bearer scheme. */
export function parseSessionHeader(header: string | undefined): PresentedCredential {
  const value = header?.trim();
  if (!value) return { kind: 'absent' };
  const token = value.startsWith('Bearer ') ? value.slice('Bearer '.length).trim() : value;
  return token ? { kind: 'token', token } : { kind: 'empty' };
}

/** The presented key, hashed: what rate limits count per key without keeping the key. */
export function presentedKeyId(request: FastifyRequest): string | undefined {
  const bearer = parseBearer(request.headers.authorization);
  return bearer.kind === 'token' ? hashSecret(bearer.token) : undefined;
}
