import { hash, randomBytes } from 'node:crypto';

/**
 * Keys and tokens are stored only as this hash; lookups hash the presented value. The one-shot
 * `hash` (Node 20.12+) is about 4x faster than a `createHash` chain for a key this short, and every
 * keyed request hashes at least once.
 */
export const hashSecret = (secret: string) => hash('sha256', secret, 'hex');

export const newProgramKey = () => `aff_${randomBytes(24).toString('base64url')}`;
export const newSessionToken = () => `dsh_${randomBytes(24).toString('base64url')}`;

/** The only form of a key that reads ever show. */
export const maskSecret = (secret: string) => `${secret.slice(0, 4)}${'*'.repeat(8)}${secret.slice(-4)}`;
export const newAgentKey = () => `agt_${randomBytes(24).toString('base64url')}`;
