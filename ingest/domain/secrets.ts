import { createHash, randomBytes } from 'node:crypto';

/** Keys and tokens are stored only as this hash; lookups hash the presented value. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');

export const newProgramKey = () => `aff_${randomBytes(24).toString('base64url')}`;
export const newSessionToken = () => `dsh_${randomBytes(24).toString('base64url')}`;

/** The only form of a key that reads ever show. */
export const maskSecret = (secret: string) => `${secret.slice(0, 4)}${'*'.repeat(8)}${secret.slice(-4)}`;
export const newAgentKey = () => `agt_${randomBytes(24).toString('base64url')}`;
