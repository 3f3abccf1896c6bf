import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { createSecretBox } from '../../core/secret-box.js';
import type { Warehouse } from '../../core/warehouse.js';
import { signInAccount } from '../../domain/access/console-sign-in.js';
import { buildApp } from '../../ingest/app.js';
import { memoryRateLimitStore, type RateLimitStore } from '../../ingest/http/rate-limit.js';
import { redirectUris } from '../../ingest/oidc/cli-identity.js';
import { newSigningKey, startEmbeddedProvider, type EmbeddedProvider } from '../../ingest/oidc/embedded-provider.js';
import { createIdentityVerifier } from '../../ingest/oidc/verifier.js';
import { DOCS_BASE_URL, FEE_BPS, PROCESSOR_SECRETS, TEST_SECRETS_KEY } from './app.js';

export const CONSOLE_CLIENT_ID = 'svc-cli';

export interface ConsoleService {
  url: string;
  app: FastifyInstance;
  provider: EmbeddedProvider;
  close(): Promise<void>;
}

/**
 * The service on a free port with the real in-process OpenID provider wired as `npm start` wires
 * it: the provider signs in the database's members and invited people, and sends the browser
 * back to the console or the CLI's login page.
 */
export async function startConsoleService(
  db: Database,
  options: { warehouse?: Warehouse; rateLimits?: RateLimitStore; webhooks?: { allowPrivateUrls: boolean } } = {},
): Promise<ConsoleService> {
  const provider = await startEmbeddedProvider({
    host: '127.0.0.1',
    port: 0,
    clientId: CONSOLE_CLIENT_ID,
    signingKey: await newSigningKey(),
    accounts: (email) => signInAccount(db, email),
  });
  let url = '';
  const app = await buildApp({
    db,
    warehouse: options.warehouse,
    rateLimits: options.rateLimits ?? memoryRateLimitStore(),
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    trustProxy: false,
    tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
    processorWebhookSecrets: () => PROCESSOR_SECRETS,
    secretBox: createSecretBox(TEST_SECRETS_KEY),
    cliIdentity: {
      verifier: createIdentityVerifier({ issuer: provider.issuer, clientId: CONSOLE_CLIENT_ID, audience: CONSOLE_CLIENT_ID, algorithms: ['RS256'] }),
      baseUrl: () => url,
    },
    publicBaseUrl: () => url,
    webhooks: options.webhooks,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  await provider.attach(redirectUris(url));
  return {
    url,
    app,
    provider,
    async close() {
      await app.close();
      await provider.close();
    },
  };
}

/** A cookie jar for fetch: the provider ties its interaction to cookies. */
function jar() {
  const cookies = new Map<string, string>();
  return {
    header: () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    take(response: Response) {
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        cookies.set(pair!.slice(0, at).trim(), pair!.slice(at + 1).trim());
      }
    },
  };
}

export interface ProviderTrip {
  state: string;
  verifier: string;
  /** Where the provider sent the browser back (with code and state, or error). */
  returnedTo: URL;
  /** The sign-in page's answer when the account was refused there (no return). */
  refusedPage?: { status: number; html: string };
}

/**
 * What a browser does between the console's "Sign in" and its return: start a sign-in with a PKCE
 * verifier, follow the provider's redirects, submit the email on its sign-in page, follow back to
 * the console. Over plain HTTP with a cookie jar, for the route tests (the browser tests use Chromium).
 */
export async function providerTrip(serviceUrl: string, email: string): Promise<ProviderTrip> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const started = await fetch(`${serviceUrl}/api/tracking/session/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code_challenge: challenge }),
  });
  if (!started.ok) throw new Error(`sign-in start answered ${started.status}: ${await started.text()}`);
  const { data } = (await started.json()) as { data: { state: string; authorization_url: string } };
  const cookies = jar();
  let next = new URL(data.authorization_url);
  for (let hop = 0; hop < 10; hop += 1) {
    if (next.origin === serviceUrl) return { state: data.state, verifier, returnedTo: next };
    let response = await fetch(next, { redirect: 'manual', headers: { cookie: cookies.header() } });
    cookies.take(response);
    if (response.status === 200 && /\/interaction\/[^/]+$/.test(next.pathname)) {
      response = await fetch(new URL(`${next.pathname}/login`, next), {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: cookies.header(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ login: email }),
      });
      cookies.take(response);
      if (response.status !== 303) return { state: data.state, verifier, returnedTo: next, refusedPage: { status: response.status, html: await response.text() } };
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`the provider answered ${response.status} at ${next.pathname} without a redirect: ${await response.text()}`);
    next = new URL(location, next);
  }
  throw new Error('too many redirects between the provider and the console');
}

/** The service's answer to a sign-in (or the provider's page that refused it). */
export interface SignInAnswer {
  data?: { token: string; user: { email: string } };
  error?: { message: string };
  page?: string;
}

/** The whole sign-in of a person with the console's routes: their session token, or the refusal's status and body. */
export async function signInThroughProvider(serviceUrl: string, email: string): Promise<{ status: number; body: SignInAnswer; trip: ProviderTrip }> {
  const trip = await providerTrip(serviceUrl, email);
  if (trip.refusedPage) return { status: trip.refusedPage.status, body: { page: trip.refusedPage.html }, trip };
  const res = await fetch(`${serviceUrl}/api/tracking/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ state: trip.returnedTo.searchParams.get('state'), code: trip.returnedTo.searchParams.get('code'), code_verifier: trip.verifier }),
  });
  return { status: res.status, body: (await res.json()) as SignInAnswer, trip };
}
