/**
 * The authentication module: every credential of the spec resolves into one Principal
 * (domain/access.ts), the one permission check decides, and auth/requirements.ts answers each
 * refusal with the spec's status and message. See auth/ for the parts.
 */
export { parseBearer, parseSessionHeader, presentedKeyId, type PresentedCredential } from './auth/bearer.js';
export { CREDENTIALS, credentialOf, type Credential } from './auth/credentials.js';
export { createAuth, type Auth, type AuthDeps } from './auth/guard.js';
export { programKeyHook, programKeyOf, rotationWarnings, type KeyAuthOptions, type RotationNotice } from './auth/program-key.js';
export { refusal } from './auth/refusal.js';
export { REQUIREMENTS, type Answer, type Family, type GuardedFamily, type ProgramKeyFamily, type Requirement } from './auth/requirements.js';
