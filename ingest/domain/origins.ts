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
