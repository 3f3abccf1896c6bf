import type { FastifyRequest } from 'fastify';
import type { Database } from '../../core/db.js';
import type { Auth } from '../http/auth.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';

/** What the money routes share: the database, the permission checks, the clock (cutoffs and periods are judged by it). */
export interface MoneyContext {
  db: Database;
  auth: Auth;
  clock: () => number;
}

export const config = { surface: 'money' as const };

/** Reading a program's money needs tracking:read; moving it (payouts, adjustments, settings) needs money:write. */
export function moneyAccess(auth: Auth) {
  return { read: auth.require('management', 'tracking:read'), write: auth.require('management', 'money:write') };
}

const KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's Idempotency-Key header: undefined when absent; 400 when it is not 1 to 255 printable characters. */
export function idempotencyKey(request: FastifyRequest): string | undefined {
  const value = request.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY.test(value)) throw badRequest(M.money.idempotencyKey);
  return value;
}
