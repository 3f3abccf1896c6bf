import type { Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import type { Auth } from '../http/auth.js';
import { PlatformError } from '../http/schemas.js';

/** What the terms routes share: the database, the permission checks, the warehouse (the simulation's). */
export interface TermsContext {
  db: Database;
  auth: Auth;
  warehouse: Warehouse | undefined;
}

/** The terms routes answer like the management routes (platform envelope, its refusals). */
export const config = { surface: 'management' as const };

/** Members read terms and groups; owners change them (terms:write, as the program's own terms). */
export function termsAccess(auth: Auth) {
  return { read: auth.require('management', 'tracking:read'), write: auth.require('management', 'terms:write') };
}

export const termsErrors = { 400: PlatformError, 401: PlatformError, 403: PlatformError, 404: PlatformError, 409: PlatformError, 500: PlatformError, 503: PlatformError };

export const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();
