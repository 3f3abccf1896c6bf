import { domainToASCII } from 'node:url';
import { sql, type Database } from '../../core/db.js';

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
