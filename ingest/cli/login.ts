import { completeLogin, LOGIN_SESSION_TTL_MS, pollLogin, POLL_INTERVAL_SECONDS, startLogin } from '../../domain/access/cli-login.js';
import { PlatformError, TypedError, type ZodApp } from '../http/schemas.js';
import { publicBase, type CliRouteContext } from './context.js';
import { LOGIN_PAGE_PATH } from './login-page.js';
import { LoginCallbackRequest, LoginCallbackResponse, LoginPollResponse, LoginPollQuery, LoginStartResponse, POLL_SECRET_HEADER, cliErrors } from './schemas.js';

/**
 * The browser login, keyless: start hands the CLI a link to the login page (login-page.ts) and a
 * poll secret; the page posts the provider's id_token to callback; poll hands the token out once.
 */
export function loginRoutes(app: ZodApp, { deps, rememberPollSecret }: CliRouteContext) {
  const { db } = deps;
  const requireIdentity = () => {
    if (!deps.identity) throw new Error('no OpenID provider is configured for the CLI login');
    return deps.identity;
  };

  app.post(
    '/auth/start',
    {
      config: { surface: 'cliAuthStart' },
      schema: { summary: 'Start a CLI browser login', response: { 200: LoginStartResponse, 429: TypedError, 500: PlatformError } },
    },
    async (request) => {
      const id = requireIdentity();
      const started = await startLogin(db);
      const url = new URL(LOGIN_PAGE_PATH, publicBase(request, id));
      url.searchParams.set('state', started.state);
      return {
        data: {
          state: started.state,
          poll_secret: started.pollSecret,
          browser_url: url.toString(),
          user_code: started.userCode,
          poll_interval_seconds: POLL_INTERVAL_SECONDS,
          expires_in_seconds: LOGIN_SESSION_TTL_MS / 1000,
          expires_at: started.expiresAt.toISOString(),
        },
      };
    },
  );

  app.post(
    '/auth/callback',
    {
      config: { surface: 'cliAuthCallback' },
      schema: { summary: 'Complete a CLI browser login with the id_token of the OpenID provider', body: LoginCallbackRequest, response: { 200: LoginCallbackResponse, ...cliErrors } },
    },
    async (request) => {
      const id = requireIdentity();
      let email = '';
      await completeLogin(db, request.body.state, async (nonce) => {
        const identityClaims = await id.verifier.verify(request.body.id_token, nonce);
        email = identityClaims.email;
        return identityClaims;
      });
      return { data: { status: 'authenticated' as const, email } };
    },
  );

  app.get(
    '/auth/poll',
    {
      config: { surface: 'cliAuthPoll' },
      schema: { summary: 'Poll a CLI login; the token is handed out once, with the poll secret', querystring: LoginPollQuery, response: { 200: LoginPollResponse, ...cliErrors } },
    },
    async (request) => {
      const secret = request.headers[POLL_SECRET_HEADER];
      const result = await pollLogin(db, request.query.state, typeof secret === 'string' ? secret : undefined);
      if (typeof secret === 'string') rememberPollSecret(secret);
      switch (result.status) {
        case 'pending':
          return { data: { status: 'pending' as const, expires_at: result.expiresAt.toISOString() } };
        case 'expired':
          return { data: { status: 'expired' as const } };
        case 'complete':
          return {
            data: { status: 'complete' as const, token: result.token, token_type: 'Bearer' as const, expires_at: result.expiresAt.toISOString(), user: result.user },
          };
      }
    },
  );
}
