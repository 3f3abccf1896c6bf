/**
 * The OpenID provider behind `svc login` and the console's sign-in for one ingest process: the
 * configured one (OIDC_ISSUER), a real one in this process for an offline start, or none. One
 * client for both, with two redirect URIs: the CLI's login page and the console.
 */
import type { Logger } from 'pino';
import type { IdentityConfig } from '../../core/config.js';
import type { Database } from '../../core/db.js';
import { signInAccount } from '../../domain/access/console-sign-in.js';
import type { CliIdentity } from '../cli/context.js';
import { LOGIN_PAGE_PATH } from '../cli/login-page.js';
import { CONSOLE_PATH } from '../dashboard/page.js';
import { startEmbeddedProvider, type EmbeddedProvider } from './embedded-provider.js';

/**
 * Where the provider may send a browser back: the CLI login page and the console, on the service's
 * URL; on a loopback URL also under the other loopback name, so a console opened on localhost
 * comes back to the same origin (its PKCE verifier is in that origin's sessionStorage).
 */
export function redirectUris(serviceUrl: string): string[] {
  const bases = [serviceUrl];
  const url = new URL(serviceUrl);
  const alias = url.hostname === '127.0.0.1' ? 'localhost' : url.hostname === 'localhost' ? '127.0.0.1' : undefined;
  if (alias) bases.push(`${url.protocol}//${alias}${url.port ? `:${url.port}` : ''}`);
  return bases.flatMap((base) => [new URL(LOGIN_PAGE_PATH, base).toString(), new URL(CONSOLE_PATH, base).toString()]);
}
import { createIdentityVerifier } from './verifier.js';

export interface CliLogin {
  /** What the CLI routes verify id_tokens with; undefined: `svc login` answers 500 on this process. */
  identity: CliIdentity | undefined;
  /** Once the service listens: its URL, for the login page's link and the embedded provider's redirect. */
  listening(url: string): Promise<void>;
  close(): Promise<void>;
}

export async function startCliLogin(config: IdentityConfig, deps: { publicBaseUrl: string | undefined; logger: Logger; db: Database }): Promise<CliLogin> {
  const { provider } = config;
  let serviceUrl = deps.publicBaseUrl;
  // The embedded provider signs in whoever the service knows: members and invited people.
  const embedded: EmbeddedProvider | undefined =
    provider.kind === 'embedded'
      ? await startEmbeddedProvider({
          host: provider.host,
          port: provider.port,
          fallbackToFreePort: !provider.portGiven,
          clientId: config.clientId,
          accounts: (email) => signInAccount(deps.db, email),
        })
      : undefined;
  const issuer = provider.kind === 'external' ? provider.issuer : embedded?.issuer;
  if (!issuer) {
    deps.logger.warn('no OIDC_ISSUER: `svc login` and the console sign-in are unavailable on this ingest process (set OIDC_ISSUER, or OIDC_EMBEDDED_PORT for a test provider)');
  }
  const verifier = issuer ? createIdentityVerifier({ issuer, clientId: config.clientId, audience: config.audience, algorithms: config.algorithms }) : undefined;
  return {
    identity: verifier ? { verifier, baseUrl: () => serviceUrl } : undefined,
    async listening(url) {
      serviceUrl = url;
      if (!embedded) return;
      await embedded.attach(redirectUris(url));
      deps.logger.info({ issuer: embedded.issuer }, 'embedded OpenID provider for svc login and the console started');
    },
    close: async () => embedded?.close(),
  };
}
