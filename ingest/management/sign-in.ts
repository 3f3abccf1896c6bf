import { sql, type Database } from '../../core/db.js';
import { completeConsoleSignIn, startConsoleSignIn } from '../../domain/access/console-sign-in.js';
import { workspacesOfUser } from '../../domain/access/team.js';
import { refused } from '../../domain/errors.js';
import type { CliIdentity } from '../cli/context.js';
import { CONSOLE_PATH } from '../dashboard/page.js';
import type { Auth } from '../http/auth.js';
import type { rateLimitHook } from '../http/rate-limit.js';
import { ApiError } from '../http/errors.js';
import { M } from '../http/messages.js';
import { PlatformError, TypedError, type ZodApp } from '../http/schemas.js';
import { IdentityProviderUnavailable, type ProviderEndpoints } from '../oidc/verifier.js';
import { Me, SignedIn, SignInCompleteRequest, SignInStarted, SignInStartRequest } from './console-schemas.js';
import { data, managementErrors } from './schemas.js';
import { sessionUserOf } from './session.js';

export interface SignInContext {
  db: Database;
  auth: Auth;
  /** The OpenID provider shared with the CLI's login; without one, sign-in answers 503. */
  identity: CliIdentity | undefined;
  /** Counts the keyless sign-in calls per client address. */
  limit: ReturnType<typeof rateLimitHook>;
}

const userQ = sql('console.me', `SELECT id, email, name FROM users WHERE id = $1`);

const errors = { ...managementErrors, 429: TypedError, 503: PlatformError };

/** The provider's endpoints, or 503 in the console's words when it cannot be reached or none is configured. */
async function providerOf(identity: CliIdentity | undefined): Promise<{ identity: CliIdentity; endpoints: ProviderEndpoints }> {
  if (!identity) throw new ApiError(503, M.console.noProvider);
  try {
    return { identity, endpoints: await identity.verifier.endpoints() };
  } catch (error) {
    if (error instanceof IdentityProviderUnavailable) throw new ApiError(503, M.console.providerUnreachable);
    throw error;
  }
}

/** Trades the code (with the PKCE verifier) at the provider's token endpoint; the id_token it returns. */
async function redeemCode(identity: CliIdentity, endpoints: ProviderEndpoints, r: { code: string; verifier: string; redirectUri: string }): Promise<string> {
  let response: Response;
  try {
    response = await fetch(endpoints.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: r.code,
        redirect_uri: r.redirectUri,
        client_id: identity.verifier.settings.clientId,
        code_verifier: r.verifier,
      }),
      signal: AbortSignal.timeout(identity.verifier.settings.timeoutMs ?? 5_000),
    });
  } catch {
    throw new ApiError(503, M.console.providerUnreachable);
  }
  const answer = (await response.json().catch(() => ({}))) as { id_token?: unknown; error?: unknown; error_description?: unknown };
  if (response.status >= 500) throw new ApiError(503, M.console.providerUnreachable);
  if (!response.ok || typeof answer.id_token !== 'string') {
    throw refused({ reason: 'sign_in_code_refused', detail: String(answer.error_description ?? answer.error ?? `HTTP ${response.status}`).slice(0, 200) });
  }
  return answer.id_token;
}

/**
 * The console's sign-in through the OpenID provider (authorization code with PKCE): the browser
 * starts it with its verifier's challenge and goes to `authorization_url`; back on the console
 * with the code, it posts state, code and verifier; the service redeems the code itself (so the
 * console's CSP keeps connect-src 'self'), checks the id_token with the verifier the CLI uses and
 * answers a dashboard session token in the body, never in a URL. GET /session says who is signed in.
 */
export function signInRoutes(app: ZodApp, { db, auth, identity, limit }: SignInContext) {
  const config = { surface: 'consoleSignIn' as const };

  app.post(
    '/session/sign-in',
    {
      config,
      onRequest: limit,
      schema: { summary: 'Start a console sign-in through the OpenID provider', body: SignInStartRequest, response: { 200: data(SignInStarted), ...errors } },
    },
    async (request) => {
      const { identity: id, endpoints } = await providerOf(identity);
      const base = id.baseUrl() ?? `${request.protocol}://${request.host}`;
      const redirectUri = new URL(CONSOLE_PATH, base).toString();
      const started = await startConsoleSignIn(db, request.body.code_challenge, redirectUri);
      const url = new URL(endpoints.authorizationEndpoint);
      const params = {
        response_type: 'code',
        client_id: id.verifier.settings.clientId,
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        state: started.state,
        nonce: started.nonce,
        code_challenge: request.body.code_challenge,
        code_challenge_method: 'S256',
        // The provider asks who is signing in every time: after a sign-out, or on a shared
        // machine, its own session never signs the last person in again unasked.
        prompt: 'login',
      };
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      return { data: { state: started.state, authorization_url: url.toString(), redirect_uri: redirectUri, expires_at: started.expiresAt.toISOString() } };
    },
  );

  app.post(
    '/session',
    {
      config,
      onRequest: limit,
      schema: { summary: 'Finish a console sign-in: a dashboard session for the verified person', body: SignInCompleteRequest, response: { 200: data(SignedIn), ...errors } },
    },
    async (request) => {
      const { identity: id, endpoints } = await providerOf(identity);
      const { state, code, code_verifier: verifier } = request.body;
      const session = await completeConsoleSignIn(db, state, verifier, async ({ nonce, redirectUri }) =>
        id.verifier.verify(await redeemCode(id, endpoints, { code, verifier, redirectUri }), nonce),
      );
      return { data: { token: session.token, expires_at: session.expiresAt.toISOString(), user: session.user } };
    },
  );

  app.get(
    '/session',
    {
      config: { surface: 'management' },
      ...auth.require('management'),
      schema: { summary: 'Who is signed in: the user and their workspaces with their role', response: { 200: data(Me), ...managementErrors } },
    },
    async (request) => {
      const userId = sessionUserOf(request);
      const user = (await db.one<{ id: number; email: string; name: string | null }>(userQ, [userId]))!;
      const workspaces = await workspacesOfUser(db, userId);
      return { data: { user: { ...user, id: Number(user.id) }, workspaces: workspaces.map((w) => ({ ...w, id: Number(w.id) })) } };
    },
  );
}
