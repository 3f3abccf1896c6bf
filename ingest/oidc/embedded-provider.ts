import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import type { Configuration, default as Provider, KoaContextWithOIDC } from 'oidc-provider';
import { errorPage, sendPage, signInPage } from './provider-pages.js';

/** The account the embedded provider signs in (the demo workspace's owner, seeded by domain/demo.ts). */
export const DEMO_ACCOUNT = { email: 'owner@demo.example', name: 'Demo owner' };

export interface EmbeddedProviderOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** When `port` is taken, listen on a free port instead of failing (the default port, PORT+1, is only a preference). */
  fallbackToFreePort?: boolean;
  clientId: string;
  /**
   * The people it can sign in (by email): a list, or a lookup asked at each sign-in (the service's
   * workspace members and invited people, domain/access/console-sign-in.ts); the demo account by default.
   */
  accounts?: readonly Account[] | AccountLookup;
  /** A private signing JWK (with kid and alg); a fresh RS256 key when absent. */
  signingKey?: Record<string, unknown>;
}

export interface EmbeddedProvider {
  issuer: string;
  /**
   * Registers the client's redirect URIs (the CLI login page, the console); requests before this
   * answer 503.
   */
  attach(redirectUris: string | readonly string[]): Promise<void>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
export type Account = { email: string; name?: string };
export type AccountLookup = (email: string) => Promise<Account | undefined>;

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
function providerConfiguration(clientId: string, redirectUris: readonly string[], jwk: Record<string, unknown>, lookup: AccountLookup): Configuration {
  return {
    clients: [
      {
        client_id: clientId,
        token_endpoint_auth_method: 'none', // a public client: the page runs in the browser, with PKCE
        redirect_uris: [...redirectUris],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The CLI needs the email in the id_token itself, not only from userinfo.
    conformIdTokenClaims: false,
    // Our own sign-in page (handleInteraction), not the package's development one.
    features: { devInteractions: { enabled: false } },
    // Short lives: a sign-in takes minutes, and the CLI login link itself lives 5.
    ttl: { Interaction: 600, Session: 3_600, Grant: 3_600, AuthorizationCode: 60, AccessToken: 600, IdToken: 600 },
    // The login page (the client's redirect origin) redeems the code from the browser.
    clientBasedCORS: (_ctx, origin, client) => client.redirectUris?.some((uri) => new URL(uri).origin === origin) ?? false,
    async findAccount(_ctx, id) {
      const account = await lookup(id.toLowerCase());
      if (!account) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: account.email.toLowerCase(), email_verified: true, name: account.name }),
      };
    },
    loadExistingGrant,
    renderError(ctx, out) {
      const { html, headers } = errorPage(String(out.error), out.error_description === undefined ? undefined : String(out.error_description));
      ctx.set(headers);
      ctx.body = html;
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

/** The interaction pages this provider serves itself: the sign-in form, its submission and "Cancel". */
const INTERACTION = /^\/interaction\/([A-Za-z0-9_-]{1,64})(\/login|\/abort)?$/;
const MAX_FORM_BYTES = 4_096;

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let text = '';
  for await (const chunk of req) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > MAX_FORM_BYTES) break;
  }
  return new URLSearchParams(text.slice(0, MAX_FORM_BYTES));
}

/**
 * GET /interaction/:uid shows the sign-in form; POST .../login signs in a known account or shows
 * the form again saying why not; .../abort cancels (the client gets access_denied). The package
 * ties each interaction to its cookie; a stale one gets a page that says so.
 */
async function handleInteraction(provider: Provider, lookup: AccountLookup, uid: string, action: string | undefined, req: IncomingMessage, res: ServerResponse) {
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch {
    return sendPage(res, 400, errorPage('session_not_found'));
  }
  const form = { action: `/interaction/${uid}/login`, cancel: `/interaction/${uid}/abort` };
  if (action === '/abort') {
    return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The sign-in was cancelled' }, { mergeWithLastSubmission: false });
  }
  if (details.prompt.name === 'consent') {
    // The service's own client needs no consent screen (loadExistingGrant); a grant covers it.
    const grant = new provider.Grant({ clientId: String(details.params.client_id), accountId: details.session!.accountId });
    grant.addOIDCScope('openid email profile');
    return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
  }
  if (action !== '/login' || req.method !== 'POST') return sendPage(res, 200, signInPage(form));
  const email = (await readForm(req)).get('login')?.trim() ?? '';
  if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 320) {
    return sendPage(res, 400, signInPage({ ...form, email, error: 'Enter an email address, such as you@company.example.' }));
  }
  const account = await lookup(email.toLowerCase());
  if (!account) {
    return sendPage(res, 400, signInPage({ ...form, email, error: `No workspace member or invited person has the email ${email}. Ask a workspace owner to invite you.` }));
  }
  return provider.interactionFinished(req, res, { login: { accountId: account.email.toLowerCase() } }, { mergeWithLastSubmission: false });
}

/**
 * A real OpenID provider (the `oidc-provider` package) in this process, so `svc login` and the
 * console's sign-in work on a fresh machine without internet. Its sign-in page (provider-pages.ts)
 * checks no password: it signs in only the accounts it is given (the workspaces' members and
 * invited people) and is for the embedded start and tests; production configures OIDC_ISSUER. Keys
 * are made at start: tokens do not survive a restart.
 */
export async function startEmbeddedProvider(options: EmbeddedProviderOptions): Promise<EmbeddedProvider> {
  const source = options.accounts ?? [DEMO_ACCOUNT];
  const listed = typeof source === 'function' ? undefined : new Map(source.map((a) => [a.email.toLowerCase(), a]));
  const lookup: AccountLookup = listed ? async (email) => listed.get(email.toLowerCase()) : (source as AccountLookup);
  let redirects: readonly string[] | undefined;
  // The package (Koa and its helpers) is loaded at the first request, not at start: a service
  // nobody signs in to does not carry it in memory.
  let handler: Promise<Handler> | undefined;
  const server = createServer((req, res) => {
    if (!redirects) {
      res.statusCode = 503;
      res.end('OpenID provider starting');
      return;
    }
    handler ??= createHandler(redirects);
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
  const createHandler = async (redirectUris: readonly string[]): Promise<Handler> => {
    const { default: ProviderClass } = await import('oidc-provider');
    const jwk = options.signingKey ?? (await newSigningKey());
    const provider = new ProviderClass(issuer, providerConfiguration(options.clientId, redirectUris, jwk, lookup));
    const callback = provider.callback();
    return (req, res) => {
      const match = INTERACTION.exec(new URL(req.url ?? '/', issuer).pathname);
      if (!match) return callback(req, res);
      handleInteraction(provider, lookup, match[1]!, match[2], req, res).catch(() => {
        if (!res.headersSent) sendPage(res, 500, errorPage('server_error'));
      });
    };
  };
  return {
    issuer,
    async attach(redirectUris) {
      redirects = typeof redirectUris === 'string' ? [redirectUris] : [...redirectUris];
      handler = undefined;
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
