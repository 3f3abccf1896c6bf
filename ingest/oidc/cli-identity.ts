/**
 * The OpenID provider behind `svc login` for one ingest process: the configured one
 * (OIDC_ISSUER), a real one in this process for an offline start, or none.
 */
import type { Logger } from 'pino';
import type { IdentityConfig } from '../../core/config.js';
import type { CliIdentity } from '../cli/context.js';
import { LOGIN_PAGE_PATH } from '../cli/login-page.js';
import { startEmbeddedProvider, type EmbeddedProvider } from './embedded-provider.js';
import { createIdentityVerifier } from './verifier.js';

export interface CliLogin {
  /** What the CLI routes verify id_tokens with; undefined: `svc login` answers 500 on this process. */
  identity: CliIdentity | undefined;
  /** Once the service listens: its URL, for the login page's link and the embedded provider's redirect. */
  listening(url: string): Promise<void>;
  close(): Promise<void>;
}

export async function startCliLogin(config: IdentityConfig, deps: { publicBaseUrl: string | undefined; logger: Logger }): Promise<CliLogin> {
  const { provider } = config;
  let serviceUrl = deps.publicBaseUrl;
  const embedded: EmbeddedProvider | undefined =
    provider.kind === 'embedded'
      ? await startEmbeddedProvider({ host: provider.host, port: provider.port, fallbackToFreePort: !provider.portGiven, clientId: config.clientId })
      : undefined;
  const issuer = provider.kind === 'external' ? provider.issuer : embedded?.issuer;
  if (!issuer) {
    deps.logger.warn('no OIDC_ISSUER: `svc login` is unavailable on this ingest process (set OIDC_ISSUER, or OIDC_EMBEDDED_PORT for a test provider)');
  }
  const verifier = issuer ? createIdentityVerifier({ issuer, clientId: config.clientId, audience: config.audience, algorithms: config.algorithms }) : undefined;
  return {
    identity: verifier ? { verifier, baseUrl: () => serviceUrl } : undefined,
    async listening(url) {
      serviceUrl = url;
      if (!embedded) return;
      await embedded.attach(new URL(LOGIN_PAGE_PATH, url).toString());
      deps.logger.info({ issuer: embedded.issuer }, 'embedded OpenID provider for svc login started');
    },
    close: async () => embedded?.close(),
  };
}
