import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { VerifiedIdentity } from '../../domain/access/cli-login.js';
import { refused } from '../../domain/errors.js';

/** The provider's endpoints the login page and the verifier use (from its discovery document). */
export interface ProviderEndpoints {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
}

export interface IdentitySettings {
  issuer: string;
  clientId: string;
  audience: string;
  algorithms: string[];
  /** How long a call to the provider may take before it counts as unreachable. */
  timeoutMs?: number;
}

/** The provider could not be reached or answered nonsense: a server-side failure (5xx), not the caller's. */
export class IdentityProviderUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IdentityProviderUnavailable';
  }
}

export interface IdentityVerifier {
  readonly settings: IdentitySettings;
  endpoints(): Promise<ProviderEndpoints>;
  /** Checks signature (JWKS), issuer, audience and azp, expiry and issue time, algorithm, nonce and a verified email; refuses `id_token_invalid`. */
  verify(idToken: string, nonce: string): Promise<VerifiedIdentity>;
}

/** Clock skew allowed between us and the provider, on exp, nbf and iat alike (seconds). */
export const CLOCK_SKEW_S = 30;

const discoveryUrl = (issuer: string) => `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;

/** Errors that mean "we could not ask the provider", as opposed to "the token is wrong". */
const unreachable = (error: unknown) =>
  error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid || !(error instanceof joseErrors.JOSEError);

/**
 * Verifies id_tokens with jose against the provider's published keys. Discovery is fetched once
 * (retried after a failure); the key set is cached by jose and refetched when an unknown kid
 * arrives, so a provider's key rotation needs no restart.
 */
export function createIdentityVerifier(settings: IdentitySettings): IdentityVerifier {
  const timeoutMs = settings.timeoutMs ?? 5_000;
  let discovered: Promise<ProviderEndpoints> | undefined;
  let keys: JWTVerifyGetKey | undefined;

  async function discover(): Promise<ProviderEndpoints> {
    let response: Response;
    try {
      response = await fetch(discoveryUrl(settings.issuer), { signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new IdentityProviderUnavailable(`OpenID provider ${settings.issuer} is unreachable`, { cause: error });
    }
    if (!response.ok) throw new IdentityProviderUnavailable(`OpenID provider discovery answered ${response.status}`);
    const doc = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (doc.issuer !== settings.issuer) {
      throw new IdentityProviderUnavailable(`OpenID provider discovery names issuer ${String(doc.issuer)}, expected ${settings.issuer}`);
    }
    const endpoints = {
      authorizationEndpoint: String(doc.authorization_endpoint ?? ''),
      tokenEndpoint: String(doc.token_endpoint ?? ''),
      jwksUri: String(doc.jwks_uri ?? ''),
    };
    if (!endpoints.authorizationEndpoint || !endpoints.tokenEndpoint || !endpoints.jwksUri) {
      throw new IdentityProviderUnavailable('OpenID provider discovery lacks authorization, token or jwks endpoints');
    }
    return endpoints;
  }

  function endpoints(): Promise<ProviderEndpoints> {
    discovered ??= discover().catch((error: unknown) => {
      discovered = undefined; // a provider that comes back later is found again
      throw error;
    });
    return discovered;
  }

  async function verify(idToken: string, nonce: string): Promise<VerifiedIdentity> {
    const { jwksUri } = await endpoints();
    keys ??= createRemoteJWKSet(new URL(jwksUri), { timeoutDuration: timeoutMs, cooldownDuration: 5_000 });
    let payload;
    try {
      ({ payload } = await jwtVerify(idToken, keys, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: settings.algorithms,
        requiredClaims: ['exp', 'iat', 'sub', 'nonce'],
        clockTolerance: CLOCK_SKEW_S,
      }));
    } catch (error) {
      if (unreachable(error)) throw new IdentityProviderUnavailable('OpenID provider keys could not be fetched', { cause: error });
      throw refused({ reason: 'id_token_invalid', detail: (error as Error).message });
    }
    const invalid = (detail: string) => refused({ reason: 'id_token_invalid', detail });
    if (payload.nonce !== nonce) throw invalid('nonce does not match the login session');
    // jose checks iat only against a maximum age; a token from the future is refused here.
    if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_SKEW_S) throw invalid('"iat" is in the future');
    // OpenID Connect Core 3.1.3.7: a token for several audiences names the party it was issued to.
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp === undefined) throw invalid('"azp" is required when "aud" has several values');
    if (payload.azp !== undefined && payload.azp !== settings.clientId) throw invalid('"azp" is not this client');
    if (typeof payload.email !== 'string' || payload.email === '') throw invalid('the id_token carries no email');
    // The email finds (or creates) the account: only a provider-verified one may.
    if (payload.email_verified !== true) throw invalid('"email_verified" must be true: the email is not verified');
    return { email: payload.email.toLowerCase(), name: typeof payload.name === 'string' ? payload.name : undefined };
  }

  return { settings, endpoints, verify };
}
