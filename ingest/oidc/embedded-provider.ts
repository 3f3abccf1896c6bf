import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';

/** The account the embedded provider signs in (the demo workspace's owner, seeded by domain/demo.ts). */
export const DEMO_ACCOUNT = { email: 'owner@demo.example', name: 'Demo owner' };

export interface EmbeddedProviderOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** When `port` is taken, listen on a free port instead of failing (the default port, PORT+1, is only a preference). */
  fallbackToFreePort?: boolean;
  clientId: string;
  /** The people it can sign in (by email); the demo account by default. */
  accounts?: { email: string; name?: string }[];
  /** A private signing JWK (with kid and alg); a fresh RS256 key when absent. */
  signingKey?: Record<string, unknown>;
}

export interface EmbeddedProvider {
  issuer: string;
  /** Registers the CLI login page as the client's one redirect URI; requests before this answer 503. */
  attach(redirectUri: string): Promise<void>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
type Account = { email: string; name?: string };

/** Listens on port, or on a free one when it is taken and fallbackToFreePort allows. */
async function listen(server: Server, options: EmbeddedProviderOptions): Promise<number> {
  const on = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  try {
    await on(options.port);
  } catch (error) {
    if (!options.fallbackToFreePort || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    await on(0);
  }
  return (server.address() as AddressInfo).port;
}

/** The package's configuration: the CLI as the one public client, the listed accounts, short lives. */
function providerConfiguration(clientId: string, redirectUri: string, jwk: Record<string, unknown>, accounts: ReadonlyMap<string, Account>): Configuration {
  return {
    clients: [
      {
        client_id: clientId,
        token_endpoint_auth_method: 'none', // a public client: the page runs in the browser, with PKCE
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The CLI needs the email in the id_token itself, not only from userinfo.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    // Short lives: a sign-in takes minutes, and the CLI login link itself lives 5.
    ttl: { Interaction: 600, Session: 3_600, Grant: 3_600, AuthorizationCode: 60, AccessToken: 600, IdToken: 600 },
    // The login page (the client's redirect origin) redeems the code from the browser.
    clientBasedCORS: (_ctx, origin, client) => client.redirectUris?.some((uri) => new URL(uri).origin === origin) ?? false,
    async findAccount(_ctx, id) {
      const account = accounts.get(id.toLowerCase());
      if (!account) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: account.email, email_verified: true, name: account.name }),
      };
    },
    loadExistingGrant,
    renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = `<!doctype html><title>Sign-in error</title><h1>Sign-in error</h1><p>${escapeHtml(String(out.error_description ?? out.error))}</p>`;
    },
  };
}

/** The CLI is the provider's own first-party client: no consent screen. */
async function loadExistingGrant(ctx: KoaContextWithOIDC) {
  const { Grant } = ctx.oidc.provider;
  const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
  if (grantId) {
    const existing = await Grant.find(grantId);
    if (existing) return existing;
  }
  const grant = new Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
  grant.addOIDCScope('openid email profile');
  await grant.save();
  return grant;
}

/**
 * A real OpenID provider (the `oidc-provider` package) in this process, so `svc login` works on a
 * fresh machine without internet. Its sign-in page is the package's development interaction: it
 * checks no password, so it signs in only the listed accounts and is for the embedded start and
 * tests; production configures OIDC_ISSUER. Keys are made at start: tokens do not survive a restart.
 */
export async function startEmbeddedProvider(options: EmbeddedProviderOptions): Promise<EmbeddedProvider> {
  const accounts = new Map((options.accounts ?? [DEMO_ACCOUNT]).map((a) => [a.email.toLowerCase(), a]));
  let redirect: string | undefined;
  // The package (Koa and its helpers) is loaded at the first request, not at start: a service
  // nobody logs in to from the CLI does not carry it in memory.
  let handler: Promise<Handler> | undefined;
  const server = createServer((req, res) => {
    if (!redirect) {
      res.statusCode = 503;
      res.end('OpenID provider starting');
      return;
    }
    handler ??= createHandler(redirect);
    handler.then(
      (handle) => handle(req, res),
      () => {
        handler = undefined;
        res.statusCode = 500;
        res.end('OpenID provider failed to start');
      },
    );
  });
  const port = await listen(server, options);
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  const issuer = `http://${host}:${port}`;
  const createHandler = async (redirectUri: string): Promise<Handler> => {
    const { default: Provider } = await import('oidc-provider');
    const jwk = options.signingKey ?? (await newSigningKey());
    return new Provider(issuer, providerConfiguration(options.clientId, redirectUri, jwk, accounts)).callback();
  };
  return {
    issuer,
    async attach(redirectUri: string) {
      redirect = redirectUri;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A private RS256 signing key as a JWK with a fresh kid. */
export async function newSigningKey(): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
