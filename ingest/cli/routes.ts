import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hashSecret } from '../../domain/access/secrets.js';
import { createAuth, presentedKeyId } from '../http/auth.js';
import { credentialRateLimit } from '../http/credential-rate-limit.js';
import { accountRoutes } from './account.js';
import type { CliDeps, CliRouteContext } from './context.js';
import { loginRoutes } from './login.js';
import { payoutRoutes } from './payouts.js';
import { programKeyRoutes } from './program-key.js';
import { retiredRoutes } from './retired.js';
import { POLL_SECRET_HEADER } from './schemas.js';

/**
 * The CLI endpoints under /api/v1/cli/: browser login (login.ts), init and programs with an
 * account login token (account.ts), status and test-event with a program key (program-key.ts),
 * and the retired stripe-connect (retired.ts). 60 requests per minute per presented key once it
 * is known to be real (the poll secret while logging in), the client address for keyless calls
 * and keys not yet known.
 */
export const cliRoutes: FastifyPluginAsync<CliDeps> = async (fastify, deps) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const auth = createAuth({ db: deps.db, docsBaseUrl: deps.docsBaseUrl, throttle: deps.authThrottle });

  const pollKey = (secret: string) => `poll:${hashSecret(secret)}`;
  const credentialOf = (r: FastifyRequest) => {
    const secret = r.headers[POLL_SECRET_HEADER];
    return presentedKeyId(r) ?? (typeof secret === 'string' && secret ? pollKey(secret) : undefined);
  };
  const limit = credentialRateLimit(deps.rateLimits, { bucket: 'cli', limit: 60, credentialOf }, app.log, deps.clock);
  // Before any route's own hooks: a refused request reaches no credential lookup. preParsing runs
  // after every onRequest hook, the routes' authentication included.
  app.addHook('onRequest', limit.beforeAuth);
  app.addHook('preParsing', (request, reply, _payload, done) => limit.afterAuth(request, reply, (err) => done(err)));

  const context: CliRouteContext = { deps, auth, rememberPollSecret: (secret) => limit.remember(pollKey(secret)) };
  loginRoutes(app, context);
  accountRoutes(app, context);
  payoutRoutes(app, context);
  programKeyRoutes(app, context);
  retiredRoutes(app);
};
