import { domainToASCII } from 'node:url';
import { sql, type Database } from '../../core/db.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';

const anyProgram = sql(
  'programs.origin_allowed_anywhere',
  `SELECT 1 AS found FROM programs WHERE allowed_origins @> ARRAY[$1::text] LIMIT 1`,
);

/**
 * A preflight carries no body, so no program is known yet: it is answered for an origin that
 * some program allows, and the request itself is then checked against its own program.
 */
export async function originAllowedAnywhere(db: Database, origin: string): Promise<boolean> {
  return (await db.one(anyProgram, [origin])) !== undefined;
}

/** The canonical form stored and compared: scheme://host[:port], nothing else. */
export function canonicalOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== value.replace(/\/$/, '')) return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A program's domain as stored: a host name only (no scheme, port, path or user), lower case, an
 * internationalized name in its ASCII (punycode) form; undefined when the value is not one. The
 * referral links are built on it, so a value such as `shop.example/x?y` would make every link wrong.
 */
export function canonicalHostname(value: string): string | undefined {
  // domainToASCII maps letter case and IDN; it gives '' for what no URL could hold as a host.
  const ascii = /[\s/\\?#@:]/.test(value) ? '' : domainToASCII(value);
  if (ascii === '' || ascii.length > 253) return undefined;
  return ascii.split('.').every((label) => LABEL.test(label)) ? ascii : undefined;
}

/** A program allows at most this many origins (the management schema's bound). */
export const MAX_ALLOWED_ORIGINS = 50;

const originQ = {
  // One statement each, so two people adding origins at once both land (no read-modify-write).
  add: sql(
    'programs.origin_add',
    `UPDATE programs SET allowed_origins = array_append(allowed_origins, $2), updated_at = now()
      WHERE id = $1 AND NOT (allowed_origins @> ARRAY[$2::text]) AND cardinality(allowed_origins) < $3
      RETURNING allowed_origins`,
  ),
  remove: sql(
    'programs.origin_remove',
    `UPDATE programs SET allowed_origins = array_remove(allowed_origins, $2), updated_at = now()
      WHERE id = $1 AND allowed_origins @> ARRAY[$2::text] RETURNING allowed_origins`,
  ),
  current: sql('programs.origins', `SELECT allowed_origins FROM programs WHERE id = $1`),
  // The list before a change, locked, for the change's audit entry.
  locked: sql('programs.origins_locked', `SELECT allowed_origins FROM programs WHERE id = $1 FOR UPDATE`),
};

export type OriginChange = { outcome: 'changed' | 'unchanged'; origins: string[] } | { outcome: 'full' } | { outcome: 'not-listed' };

/** Adds one origin (canonical form) to a program's list; adding one already there changes nothing (and leaves no audit entry). */
export async function addAllowedOrigin(db: Database, programId: number, origin: string, by: AuditContext): Promise<OriginChange> {
  return db.transaction(async (tx) => {
    const before = (await tx.one<{ allowed_origins: string[] }>(originQ.locked, [programId]))!;
    const added = await tx.one<{ allowed_origins: string[] }>(originQ.add, [programId, origin, MAX_ALLOWED_ORIGINS]);
    if (!added) return before.allowed_origins.includes(origin) ? { outcome: 'unchanged', origins: before.allowed_origins } : { outcome: 'full' };
    await recordAudit(tx, by, { action: 'program.origin_added', programId, target: { type: 'program', id: programId }, before, after: { allowed_origins: added.allowed_origins } });
    return { outcome: 'changed', origins: added.allowed_origins };
  });
}

export async function removeAllowedOrigin(db: Database, programId: number, origin: string, by: AuditContext): Promise<OriginChange> {
  return db.transaction(async (tx) => {
    const before = (await tx.one<{ allowed_origins: string[] }>(originQ.locked, [programId]))!;
    const removed = await tx.one<{ allowed_origins: string[] }>(originQ.remove, [programId, origin]);
    if (!removed) return { outcome: 'not-listed' };
    await recordAudit(tx, by, { action: 'program.origin_removed', programId, target: { type: 'program', id: programId }, before, after: { allowed_origins: removed.allowed_origins } });
    return { outcome: 'changed', origins: removed.allowed_origins };
  });
}
