import type { FastifyInstance } from 'fastify';
import { importJWK, SignJWT, type JWK } from 'jose';
import type { Database } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { buildApp } from '../../ingest/app.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { DEMO_ACCOUNT, newSigningKey, startEmbeddedProvider, type EmbeddedProvider } from '../../ingest/oidc/embedded-provider.js';
import { createIdentityVerifier } from '../../ingest/oidc/verifier.js';
import { LOGIN_PAGE_PATH } from '../../ingest/cli/login-page.js';
import { DOCS_BASE_URL, FEE_BPS } from './app.js';

export const CLI_CLIENT_ID = 'svc-cli';

export interface CliService {
  url: string;
  app: FastifyInstance;
  provider: EmbeddedProvider;
  /** An id_token for the login session of `state`, signed with the provider's own key (what the browser would get). */
  signIdToken(nonce: string, email?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The service listening on a free port with the real in-process OpenID provider, as `svc` and a
 * browser reach it: the provider's client redirects to this service's login page.
 */
export async function startCliService(db: Database): Promise<CliService> {
  const signingKey = await newSigningKey();
  const provider = await startEmbeddedProvider({ host: '127.0.0.1', port: 0, clientId: CLI_CLIENT_ID, signingKey });
  let url = '';
  const app = await buildApp({
    db,
    rateLimits: memoryRateLimitStore(),
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    trustProxy: false,
    tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    cliIdentity: {
      verifier: createIdentityVerifier({ issuer: provider.issuer, clientId: CLI_CLIENT_ID, audience: CLI_CLIENT_ID, algorithms: ['RS256'] }),
      baseUrl: () => url,
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address() as { port: number };
  url = `http://127.0.0.1:${address.port}`;
  await provider.attach(new URL(LOGIN_PAGE_PATH, url).toString());
  return {
    url,
    app,
    provider,
    async signIdToken(nonce, email = DEMO_ACCOUNT.email) {
      return new SignJWT({ email, email_verified: true, nonce })
        .setProtectedHeader({ alg: 'RS256', kid: String(signingKey.kid) })
        .setIssuer(provider.issuer)
        .setAudience(CLI_CLIENT_ID)
        .setSubject(email)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(await importJWK(signingKey as JWK, 'RS256'));
    },
    async close() {
      await app.close();
      await provider.close();
    },
  };
}

/** The nonce the login page would send to the provider for this session. */
export async function loginPageNonce(url: string, state: string): Promise<string> {
  const page = await fetch(new URL(`${LOGIN_PAGE_PATH}?state=${encodeURIComponent(state)}`, url));
  if (!page.ok) throw new Error(`login page answered ${page.status}`);
  const html = await page.text();
  return JSON.parse(/<script type="application\/json" id="cfg">(.*?)<\/script>/s.exec(html)![1]!).nonce as string;
}
