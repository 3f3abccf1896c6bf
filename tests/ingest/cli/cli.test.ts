import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { importJWK, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { buildApp } from '../../../ingest/app.js';
import { markKeyForRotation } from '../../../domain/programs/api-keys.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { addMember, createWorkspace } from '../../../domain/access/workspaces.js';
import { memoryRateLimitStore } from '../../../ingest/http/rate-limit.js';
import { newSigningKey, startEmbeddedProvider, type EmbeddedProvider } from '../../../ingest/oidc/embedded-provider.js';
import { createIdentityVerifier } from '../../../ingest/oidc/verifier.js';
import { DOCS_BASE_URL, FEE_BPS, createTestProgram, freshIp } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const CLIENT_ID = 'svc-cli';
const count = (t: TestDatabase, table: string) =>
  t.db.one<{ n: number }>(sql(`t.count_${table}`, `SELECT count(*)::int AS n FROM ${table}`)).then((r) => r!.n);

/** A port nothing listens on: the "provider unreachable" case. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe.each(databaseKinds())('CLI endpoints on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let unreachableApp: FastifyInstance;
  let provider: EmbeddedProvider;
  let signingKey: Record<string, unknown>;
  let now = Date.now();

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    signingKey = await newSigningKey();
    // A real OpenID provider (oidc-provider) publishes the key; the tests sign id_tokens with it
    // to build the negative cases a browser sign-in cannot produce.
    provider = await startEmbeddedProvider({ host: '127.0.0.1', port: 0, clientId: CLIENT_ID, signingKey });
    await provider.attach('http://127.0.0.1:9/cli/login');
    const build = (issuer: string) =>
      buildApp({
        db: t.db,
        rateLimits: memoryRateLimitStore(),
        clock: () => now,
        logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
        trustProxy: ['127.0.0.1'],
        tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
        cliIdentity: {
          verifier: createIdentityVerifier({ issuer, clientId: CLIENT_ID, audience: CLIENT_ID, algorithms: ['RS256'], timeoutMs: 2_000 }),
          baseUrl: () => 'http://svc.test',
        },
      });
    app = await build(provider.issuer);
    unreachableApp = await build(`http://127.0.0.1:${await closedPort()}`);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await unreachableApp?.close();
    await provider?.close();
    await t?.drop();
  });

  const ip = () => ({ 'x-forwarded-for': freshIp() });
  const start = async (target = app) => {
    const res = await target.inject({ method: 'POST', url: '/api/v1/cli/auth/start', headers: ip() });
    expect(res.statusCode).toBe(200);
    return res.json().data as { state: string; poll_secret: string; browser_url: string; user_code: string; poll_interval_seconds: number };
  };
  /** The nonce the login page sends to the provider. */
  const nonceOf = async (state: string) => {
    const page = await app.inject({ method: 'GET', url: `/cli/login?state=${encodeURIComponent(state)}` });
    expect(page.statusCode).toBe(200);
    // The CSP's frame-ancestors 'none', for browsers that read only the older header.
    expect(page.headers['x-frame-options']).toBe('DENY');
    const cfg = JSON.parse(/<script type="application\/json" id="cfg">(.*?)<\/script>/s.exec(page.body)![1]!);
    return cfg.nonce as string;
  };
  const idToken = async (claims: Record<string, unknown>, options: { key?: Record<string, unknown>; exp?: number; iat?: number } = {}) => {
    const key = options.key ?? signingKey;
    const jwt = new SignJWT({ email: 'owner@demo.example', email_verified: true, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: String(key.kid) })
      .setIssuer(provider.issuer)
      .setAudience(typeof claims.aud === 'string' || Array.isArray(claims.aud) ? (claims.aud as string | string[]) : CLIENT_ID)
      .setSubject('owner@demo.example')
      .setIssuedAt(options.iat)
      .setExpirationTime(options.exp ?? '5m');
    return jwt.sign(await importJWK(key as JWK, 'RS256'));
  };
  const callback = (payload: unknown, target = app) =>
    target.inject({ method: 'POST', url: '/api/v1/cli/auth/callback', headers: ip(), payload: payload as object });
  const poll = (state: string, secret?: string) =>
    app.inject({
      method: 'GET',
      url: `/api/v1/cli/auth/poll?state=${encodeURIComponent(state)}`,
      headers: { ...ip(), ...(secret ? { 'x-poll-secret': secret } : {}) },
    });
  const errorOf = (res: { json(): { error: { message: string; status?: number; details?: Record<string, unknown> } } }) => res.json().error;

  /** A user with a workspace, logged in through the whole HTTP flow. */
  async function login(email: string) {
    const s = await start();
    const nonce = await nonceOf(s.state);
    const done = await callback({ state: s.state, id_token: await idToken({ nonce, email }) });
    expect(done.statusCode, done.body).toBe(200);
    const res = await poll(s.state, s.poll_secret);
    return res.json().data.token as string;
  }

  it('login: start, callback with a verified id_token, the token handed out once with the poll secret, stored as a hash', async () => {
    const s = await start();
    expect(s.browser_url).toBe(`http://svc.test/cli/login?state=${s.state}`);
    expect(s.browser_url).not.toContain(s.poll_secret);
    expect(s.user_code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    expect(s.poll_interval_seconds).toBeGreaterThan(0);

    expect((await poll(s.state, s.poll_secret)).json().data.status).toBe('pending');
    const nonce = await nonceOf(s.state);
    const done = await callback({ state: s.state, id_token: await idToken({ nonce }) });
    expect(done.json()).toEqual({ data: { status: 'authenticated', email: 'owner@demo.example' } });
    expect(done.headers['x-request-id']).toBeTruthy();

    // A leaked state alone collects nothing: without the secret it is "not found".
    for (const secret of [undefined, 'lps_wrong']) {
      const stolen = await poll(s.state, secret);
      expect(stolen.statusCode).toBe(404);
      expect(errorOf(stolen).message).toBe('Session not found');
    }
    const first = await poll(s.state, s.poll_secret);
    expect(first.statusCode).toBe(200);
    const data = first.json().data;
    expect(data).toMatchObject({ status: 'complete', token_type: 'Bearer', user: { email: 'owner@demo.example' } });
    const stored = await t.db.many<{ token_hash: string }>(sql('t.tokens', 'SELECT token_hash FROM cli_login_tokens'), []);
    expect(stored.map((r) => r.token_hash)).toContain(hashSecret(data.token));
    expect(JSON.stringify(stored)).not.toContain(data.token);

    const again = await poll(s.state, s.poll_secret);
    expect(again.statusCode).toBe(400);
    expect(errorOf(again).message).toBe('Session already consumed');
    const reused = await callback({ state: s.state, id_token: await idToken({ nonce }) });
    expect(reused.statusCode).toBe(404);
    expect(errorOf(reused).message).toBe('Session not found or already used');
  });

  it('callback and poll messages: missing fields, unknown state, expired link (5 minutes), suspended account', async () => {
    for (const body of [{}, { state: 'x' }, { id_token: 'y' }, { state: '', id_token: 'y' }, { state: 1, id_token: 'y' }]) {
      const res = await callback(body);
      expect(res.statusCode).toBe(400);
      expect(errorOf(res).message).toBe('Missing required fields: state, id_token');
    }
    const unknown = await callback({ state: 'nope', id_token: 'x.y.z' });
    expect([unknown.statusCode, errorOf(unknown).message]).toEqual([404, 'Session not found or already used']);
    const noState = await app.inject({ method: 'GET', url: '/api/v1/cli/auth/poll', headers: ip() });
    expect([noState.statusCode, errorOf(noState).message]).toEqual([400, 'Missing state parameter']);
    const unknownPoll = await poll('nope', 'lps_x');
    expect([unknownPoll.statusCode, errorOf(unknownPoll).message]).toEqual([404, 'Session not found']);

    const s = await start();
    const nonce = await nonceOf(s.state);
    await t.db.many(sql('t.expire', `UPDATE cli_login_sessions SET expires_at = now() - interval '1 second' WHERE state = $1`), [s.state]);
    const late = await callback({ state: s.state, id_token: await idToken({ nonce }) });
    expect([late.statusCode, errorOf(late).message]).toEqual([400, 'Session expired']);
    expect((await poll(s.state, s.poll_secret)).json()).toEqual({ data: { status: 'expired' } });

    const workspaceId = await createWorkspace(t.db, 'Suspended');
    const userId = await addMember(t.db, workspaceId, 'suspended@test.example', 'owner');
    await t.db.many(sql('t.suspend', 'UPDATE users SET suspended_at = now() WHERE id = $1'), [userId]);
    const s2 = await start();
    const blocked = await callback({ state: s2.state, id_token: await idToken({ nonce: await nonceOf(s2.state), email: 'suspended@test.example' }) });
    expect(blocked.statusCode).toBe(403);
    expect(errorOf(blocked)).toMatchObject({ status: 403, name: 'ForbiddenError', message: 'Your account has been suspended.', details: { code: 'ACCOUNT_BLOCKED' } });
    expect((await poll(s2.state, s2.poll_secret)).json().data.status).toBe('pending');
  });

  it('id_token negatives: wrong audience, expired, alg none, unknown key id, wrong nonce (400, nothing bound); provider unreachable is a clear 500', async () => {
    const s = await start();
    const nonce = await nonceOf(s.state);
    const otherKey = await newSigningKey();
    const NEW = 'negative@test.example'; // would be created by a first login that succeeded
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify({ iss: provider.issuer, aud: CLIENT_ID, sub: 'x', nonce, email: 'owner@demo.example', iat: 1, exp: 4_000_000_000 })).toString('base64url');
    const cases: [string, string, RegExp][] = [
      ['wrong audience', await idToken({ nonce, aud: 'someone-else', email: NEW }), /aud/],
      ['expired', await idToken({ nonce, email: NEW }, { exp: Math.floor(Date.now() / 1000) - 3600 }), /exp/],
      ['alg none', `${header}.${body}.`, /alg|JWS|Unsupported|not allowed/i],
      ['unknown kid', await idToken({ nonce, email: NEW }, { key: otherKey }), /key|JWKS/i],
      ['wrong nonce', await idToken({ nonce: 'other', email: NEW }), /nonce/],
    ];
    for (const [name, token, why] of cases) {
      const res = await callback({ state: s.state, id_token: token });
      expect(res.statusCode, name).toBe(400);
      expect(errorOf(res).message, name).toMatch(/^Invalid id_token: /);
      expect(errorOf(res).message, name).toMatch(why);
    }
    expect((await poll(s.state, s.poll_secret)).json().data.status).toBe('pending');
    expect(await t.db.one(sql('t.negative_user', 'SELECT id FROM users WHERE email = $1'), [NEW])).toBeUndefined();

    const u = await start(unreachableApp);
    // The login page says so too, in HTML, instead of sending the person to a dead provider.
    const deadPage = await unreachableApp.inject({ method: 'GET', url: `/cli/login?state=${u.state}` });
    expect(deadPage.statusCode).toBe(503);
    expect(deadPage.body).toContain('The sign-in provider cannot be reached right now.');
    const down = await callback({ state: u.state, id_token: await idToken({ nonce: 'n' }) }, unreachableApp);
    expect(down.statusCode).toBe(500);
    const requestId = down.headers['x-request-id'];
    expect(errorOf(down)).toMatchObject({ name: 'InternalServerError', message: `Auth callback failed (request_id: ${requestId})`, details: { request_id: requestId } });
  });

  /** A callback on a fresh login session with the token `sign` makes for its nonce; whether it bound the session. */
  async function signIn(sign: (nonce: string) => Promise<string>) {
    const s = await start();
    const res = await callback({ state: s.state, id_token: await sign(await nonceOf(s.state)) });
    const status = (await poll(s.state, s.poll_secret)).json().data?.status as string | undefined;
    return { res, bound: status === 'complete' };
  }
  const userExists = async (email: string) => (await t.db.one(sql('t.id_token_user', 'SELECT id FROM users WHERE email = $1'), [email])) !== undefined;
  /** Refused with id_token_invalid naming `why`; the session stays unbound and no user is created. */
  async function expectRefused(name: string, email: string, sign: (nonce: string) => Promise<string>, why: RegExp) {
    const { res, bound } = await signIn(sign);
    expect(res.statusCode, `${name}: ${res.body}`).toBe(400);
    expect(errorOf(res).message, name).toMatch(/^Invalid id_token: /);
    expect(errorOf(res).message, name).toMatch(why);
    expect(bound, name).toBe(false);
    expect(await userExists(email), name).toBe(false);
  }
  async function expectAccepted(name: string, sign: (nonce: string) => Promise<string>) {
    const { res, bound } = await signIn(sign);
    expect(res.statusCode, `${name}: ${res.body}`).toBe(200);
    expect(bound, name).toBe(true);
  }

  // Issue 27, point 6: the email finds (or creates) the account, so it must be verified by the provider.
  it('id_token: email_verified must be the boolean true (absent, "true", false and 1 are refused)', async () => {
    for (const [name, value] of [['absent', undefined], ['the string "true"', 'true'], ['false', false], ['1', 1]] as const) {
      const email = `unverified-${name.length}-${kind}@test.example`;
      await expectRefused(`email_verified ${name}`, email, (nonce) => idToken({ nonce, email, email_verified: value }), /email_verified|not verified/);
    }
    await expectAccepted('email_verified true', (nonce) => idToken({ nonce, email: `verified-${kind}@test.example`, email_verified: true }));
  });

  it('id_token: with several audiences, azp must be present and be our client id; a present azp is always ours', async () => {
    const email = `azp-${kind}@test.example`;
    const both = [CLIENT_ID, 'another-client'];
    await expectRefused('several audiences, no azp', email, (nonce) => idToken({ nonce, email, aud: both }), /azp/);
    await expectRefused('several audiences, azp of another client', email, (nonce) => idToken({ nonce, email, aud: both, azp: 'another-client' }), /azp/);
    await expectRefused('one audience, azp of another client', email, (nonce) => idToken({ nonce, email, azp: 'another-client' }), /azp/);
    await expectAccepted('several audiences, azp ours', (nonce) => idToken({ nonce, email: `azp-ok-${kind}@test.example`, aud: both, azp: CLIENT_ID }));
    await expectAccepted('one audience in an array, no azp', (nonce) => idToken({ nonce, email: `azp-one-${kind}@test.example`, aud: [CLIENT_ID] }));
  });

  it('id_token: issued more than 30 seconds in the future is refused; within the skew it is accepted', async () => {
    const nowS = () => Math.floor(Date.now() / 1000);
    const email = `future-${kind}@test.example`;
    await expectRefused('iat in 5 minutes', email, (nonce) => idToken({ nonce, email }, { iat: nowS() + 300 }), /iat/);
    await expectRefused('iat in 45 seconds', email, (nonce) => idToken({ nonce, email }, { iat: nowS() + 45 }), /iat/);
    await expectAccepted('iat in 10 seconds', (nonce) => idToken({ nonce, email: `future-ok-${kind}@test.example` }, { iat: nowS() + 10 }));
  });

  it('init and programs: the account token, advertiser_id, the three 401s that say to log in again, and validation', async () => {
    const workspaceId = await createWorkspace(t.db, 'CLI brand');
    await addMember(t.db, workspaceId, 'brand@test.example', 'owner');
    const token = await login('brand@test.example');
    const auth = { authorization: `Bearer ${token}` };
    const programsBefore = await count(t, 'programs');

    const created = await app.inject({
      method: 'POST', url: '/api/v1/cli/init', headers: { ...auth, ...ip() },
      payload: { name: 'CLI program', domain: 'cli.example', commission_type: 'percent', commission_rate: 15 },
    });
    expect(created.statusCode, created.body).toBe(200);
    const program = created.json().data.program;
    expect(program).toMatchObject({ name: 'CLI program', advertiser_id: workspaceId, workspace_id: workspaceId });
    expect(program.api_token_masked).toMatch(/^aff_\*{8}/);
    expect(created.body).not.toMatch(/aff_[A-Za-z0-9_-]{32}/);

    const listed = await app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { ...auth, ...ip() } });
    expect(listed.json().data).toEqual([expect.objectContaining({ id: program.id, advertiser_id: workspaceId, role: 'owner', name: 'CLI program' })]);

    const init = (payload: object, headers: Record<string, string> = auth) =>
      app.inject({ method: 'POST', url: '/api/v1/cli/init', headers: { ...headers, ...ip() }, payload });
    const valid = { name: 'P', domain: 'p.example', commission_type: 'fixed', commission_rate: 5 };
    const cases: [object, number, string][] = [
      [{ name: 'P' }, 400, 'Missing required fields: name, domain, commission_type, commission_rate'],
      [{ ...valid, commission_type: 'weekly' }, 400, 'Invalid commission_type: weekly. Valid: percent, fixed, recurring_percent, recurring_fixed'],
      [{ ...valid, commission_rate: 0 }, 400, 'commission_rate must be a positive number'],
      [{ ...valid, commission_rate: 'x' }, 400, 'commission_rate must be a positive number'],
      [{ ...valid, advertiser_id: workspaceId + 1000 }, 403, 'advertiser_id does not match the authenticated account'],
    ];
    for (const [payload, status, message] of cases) {
      const res = await init(payload);
      expect([res.statusCode, errorOf(res).message]).toEqual([status, message]);
    }
    const other = await createWorkspace(t.db, 'Not mine');
    const notMine = await init({ ...valid, advertiser_id: other });
    expect([notMine.statusCode, errorOf(notMine).message]).toEqual([403, 'advertiser_id does not match the authenticated account']);

    // 401: no token, invalid/expired token, user gone. Each says to log in again.
    const missing = await init(valid, {});
    expect([missing.statusCode, errorOf(missing).message]).toEqual([401, 'Missing or malformed Authorization header. Run `svc login` to log in again.']);
    const invalid = await init(valid, { authorization: 'Bearer slt_nope' });
    expect([invalid.statusCode, errorOf(invalid).message]).toEqual([401, 'Invalid or expired login token. Run `svc login` to log in again.']);
    const loner = await login('loner@test.example');
    const noAdvertiser = await init(valid, { authorization: `Bearer ${loner}` });
    expect(noAdvertiser.statusCode).toBe(403);
    expect(errorOf(noAdvertiser).message).toMatch(/No advertiser/);
    await t.db.many(sql('t.drop_user', `DELETE FROM users WHERE email = 'loner@test.example'`));
    const gone = await init(valid, { authorization: `Bearer ${loner}` });
    expect([gone.statusCode, errorOf(gone).message]).toEqual([401, 'User not found. Run `svc login` to log in again.']);
    const goneList = await app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { authorization: `Bearer ${loner}`, ...ip() } });
    expect([goneList.statusCode, errorOf(goneList).message]).toEqual([401, 'User not found']);
    await t.db.many(sql('t.expire_tokens', `UPDATE cli_login_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1`), [hashSecret(token)]);
    const expired = await app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { ...auth, ...ip() } });
    expect([expired.statusCode, errorOf(expired).message]).toEqual([401, 'Invalid or expired login token. Run `svc login` to log in again.']);
    // A program key is not an account token.
    const p = await createTestProgram(app, t.db);
    const withKey = await app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { authorization: `Bearer ${p.apiKey}`, ...ip() } });
    expect(withKey.statusCode).toBe(401);
    expect(await count(t, 'programs')).toBe(programsBefore + 2);
  });

  it('status and test-event with a program key: 401 messages, X-Request-ID rules, single events, the chain and its hourly cap', async () => {
    const p = await createTestProgram(app, t.db, { paymentTrackingMode: 's2s' });
    const key = { authorization: `Bearer ${p.apiKey}` };
    const status = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/v1/cli/status', headers: { ...headers, ...ip() } });

    const before = await status(key);
    expect(before.statusCode).toBe(200);
    expect(before.headers['x-request-id']).toBeUndefined();
    expect(before.json().data).toMatchObject({
      programId: String(p.programId),
      stepStatuses: { pageview: 'pending', referrals: 'pending', payments: 'complete' },
      statistics: { payments: { paymentTrackingMode: 's2s', processorConnectionStatus: 'not_connected', isProcessorConnected: false, methodReady: true } },
    });
    const noKey = await status({});
    expect([noKey.statusCode, errorOf(noKey).message]).toEqual([401, 'Missing or malformed Authorization header. Expected: Bearer <api_token>']);
    expect(noKey.headers['x-request-id']).toBeUndefined();
    const empty = await status({ authorization: 'Bearer ' });
    expect(errorOf(empty).message).toBe('Missing API token');
    const wrong = await status({ authorization: 'Bearer aff_wrong' });
    expect(wrong.statusCode).toBe(401);
    expect(errorOf(wrong).message).toMatch(/^Invalid API key\..*regenerate/);

    const event = (payload: object, headers: Record<string, string> = key) =>
      app.inject({ method: 'POST', url: '/api/v1/cli/test-event', headers: { ...headers, ...ip() }, payload });
    for (const [payload, message] of [
      [{ event_type: 'refund' }, 'Invalid event_type: refund. Valid: click, lead, sale'],
      [{}, 'Invalid event_type: (none). Valid: click, lead, sale'],
      [{ type: 'loop' }, 'Invalid type: loop. Valid: chain'],
    ] as const) {
      const res = await event(payload);
      expect([res.statusCode, errorOf(res).message]).toEqual([400, message]);
      expect(res.headers['x-request-id']).toBeTruthy();
    }
    const logsBefore = await count(t, 'tracking_logs');
    const click = await event({ event_type: 'click' });
    expect(click.statusCode, click.body).toBe(200);
    expect(click.json().data).toMatchObject({ mode: 'single', test_mode: true, event_type: 'click', recorded: { click_id: expect.any(String) } });
    const lead = await event({ event_type: 'lead' });
    expect(lead.json().data.recorded).toMatchObject({ customer_id: expect.any(Number), status: 'lead' });
    const sale = await event({ event_type: 'sale' });
    expect(sale.json().data.recorded).toMatchObject({ sale_id: expect.any(String), amount_cents: 4900, currency: 'USD' });
    // click 1, lead 2 (its click and the lead), sale 1
    expect(await count(t, 'tracking_logs')).toBe(logsBefore + 4);

    const after = await status(key);
    expect(after.json().data.stepStatuses).toEqual({ pageview: 'complete', referrals: 'complete', payments: 'complete' });
    expect(after.json().data.hasPartners).toBe(true); // the test program's own partner; the fixture partner is pending

    const chain = await event({ type: 'chain' });
    expect(chain.statusCode, chain.body).toBe(200);
    const data = chain.json().data;
    expect(data.steps.map((s: { step: string }) => s.step)).toEqual(['click', 'lead', 'sale']);
    expect(data.fixtures).toMatchObject({ created: false, aff_code: expect.stringMatching(/^svc-test-/) });
    expect(data.chains_left_this_hour).toBe(9);
    for (let i = 0; i < 9; i += 1) expect((await event({ type: 'chain' })).statusCode).toBe(200);
    const salesBefore = await count(t, 'sale_events');
    const fixtureBefore = await t.db.one<{ at: Date }>(sql('t.fixture_at', 'SELECT refreshed_at AS at FROM cli_test_fixtures WHERE program_id = $1'), [p.programId]);
    const capped = await event({ type: 'chain' });
    expect(capped.statusCode).toBe(429);
    expect(capped.json()).toEqual({ error: { code: 'rate_limited', message: 'Too many synthetic chains (max 10/program/hour).', status: 429, retry_after_seconds: expect.any(Number) } });
    expect(Number(capped.headers['retry-after'])).toBeGreaterThan(0);
    expect(await count(t, 'sale_events')).toBe(salesBefore);
    const fixtureAfter = await t.db.one<{ at: Date }>(sql('t.fixture_at2', 'SELECT refreshed_at AS at FROM cli_test_fixtures WHERE program_id = $1'), [p.programId]);
    expect(fixtureAfter!.at.getTime()).toBeGreaterThanOrEqual(fixtureBefore!.at.getTime());
    // Single events are not chains: still allowed.
    expect((await event({ event_type: 'click' })).statusCode).toBe(200);
  });

  it('concurrent chains: exactly 10 of 12 pass the hourly cap', async () => {
    const p = await createTestProgram(app, t.db);
    const runs = await Promise.all(
      Array.from({ length: 12 }, () =>
        app.inject({ method: 'POST', url: '/api/v1/cli/test-event', headers: { authorization: `Bearer ${p.apiKey}`, ...ip() }, payload: { type: 'chain' } }),
      ),
    );
    const statuses = runs.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
    const counted = await t.db.one<{ n: number }>(sql('t.chain_runs', 'SELECT count(*)::int AS n FROM cli_test_chain_runs WHERE program_id = $1'), [p.programId]);
    expect(counted!.n).toBe(10);
    const fixtures = await t.db.one<{ n: number }>(sql('t.fixture_rows', 'SELECT count(*)::int AS n FROM cli_test_fixtures WHERE program_id = $1'), [p.programId]);
    expect(fixtures!.n).toBe(1);
  });

  it('program keys marked for rotation: warnings before the deadline, 401 api_key_rotation_required after', async () => {
    const p = await createTestProgram(app, t.db);
    const headers = { authorization: `Bearer ${p.apiKey}` };
    await markKeyForRotation(t.db, p.programId, new Date(Date.now() + 86_400_000));
    const warned = await app.inject({ method: 'GET', url: '/api/v1/cli/status', headers: { ...headers, ...ip() } });
    expect(warned.statusCode).toBe(200);
    expect(warned.json().warnings).toEqual([expect.objectContaining({ code: 'api_key_rotation_required' })]);
    expect(warned.headers.deprecation).toMatch(/^@\d+$/);
    await markKeyForRotation(t.db, p.programId, new Date(Date.now() - 1_000));
    const logsBefore = await count(t, 'tracking_logs');
    const retired = await app.inject({ method: 'POST', url: '/api/v1/cli/test-event', headers: { ...headers, ...ip() }, payload: { event_type: 'click' } });
    expect(retired.statusCode, retired.body).toBe(401);
    expect(retired.json().error.code).toBe('api_key_rotation_required');
    expect(retired.json().warnings).toBeUndefined();
    expect(await count(t, 'tracking_logs')).toBe(logsBefore);
  });

  it('a suspended account: its existing login token stops working', async () => {
    const workspaceId = await createWorkspace(t.db, 'Soon suspended');
    const userId = await addMember(t.db, workspaceId, 'later-suspended@test.example', 'owner');
    const token = await login('later-suspended@test.example');
    const programs = () => app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { authorization: `Bearer ${token}`, ...ip() } });
    expect((await programs()).statusCode).toBe(200);
    await t.db.many(sql('t.suspend_later', 'UPDATE users SET suspended_at = now() WHERE id = $1'), [userId]);
    const refused = await programs();
    expect([refused.statusCode, errorOf(refused).message]).toEqual([401, 'Invalid or expired login token. Run `svc login` to log in again.']);
  });

  it('every CLI 500: the message ends with the request id, which is also in details and the X-Request-ID header (GET /status too)', async () => {
    const p = await createTestProgram(app, t.db);
    const key = { authorization: `Bearer ${p.apiKey}` };
    const workspaceId = await createWorkspace(t.db, 'Failing');
    await addMember(t.db, workspaceId, 'failing@test.example', 'owner');
    const token = await login('failing@test.example');
    const account = { authorization: `Bearer ${token}` };
    const rename = (from: string, to: string) => t.db.many(sql(`t.rename_${from}`, `ALTER TABLE ${from} RENAME TO ${to}`));
    const expect500 = (res: { statusCode: number; headers: Record<string, unknown>; json(): { error: { message: string; details: Record<string, unknown> } } }, message: (id: string) => string) => {
      expect(res.statusCode).toBe(500);
      const id = String(res.headers['x-request-id']);
      expect(id).not.toBe('undefined');
      expect(res.json().error).toMatchObject({ message: message(id), details: { request_id: id } });
    };

    await rename('tracking_logs', 'tracking_logs_away');
    try {
      expect500(await app.inject({ method: 'GET', url: '/api/v1/cli/status', headers: { ...key, ...ip() } }), (id) => `Failed to get status (request_id: ${id})`);
      expect500(await app.inject({ method: 'POST', url: '/api/v1/cli/test-event', headers: { ...key, ...ip() }, payload: { event_type: 'click' } }), (id) => `Failed to process test event (request_id: ${id})`);
      expect500(await app.inject({ method: 'POST', url: '/api/v1/cli/test-event', headers: { ...key, ...ip() }, payload: { type: 'chain' } }), (id) => `Failed to run synthetic chain (request_id: ${id})`);
    } finally {
      await rename('tracking_logs_away', 'tracking_logs');
    }
    await rename('program_api_keys', 'program_api_keys_away');
    try {
      expect500(await app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: { ...account, ...ip() } }), (id) => `Failed to list programs (request_id: ${id})`);
      expect500(
        await app.inject({ method: 'POST', url: '/api/v1/cli/init', headers: { ...account, ...ip() }, payload: { name: 'X', domain: 'x.example', commission_type: 'fixed', commission_rate: 1 } }),
        (id) => `Failed to create program (request_id: ${id})`,
      );
    } finally {
      await rename('program_api_keys_away', 'program_api_keys');
    }
    const s = await start();
    await rename('cli_login_sessions', 'cli_login_sessions_away');
    try {
      expect500(await poll(s.state, s.poll_secret), (id) => `Failed to poll auth session (request_id: ${id})`);
      expect500(await app.inject({ method: 'POST', url: '/api/v1/cli/auth/start', headers: ip() }), (id) => `Failed to start auth session (request_id: ${id})`);
      expect500(await callback({ state: s.state, id_token: 'x.y.z' }), (id) => `Auth callback failed (request_id: ${id})`);
    } finally {
      await rename('cli_login_sessions_away', 'cli_login_sessions');
    }
  });

  it('stripe-connect is 410; CLI routes carry rate-limit headers, 60 per minute per key', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of ['auth/start', 'auth/callback', 'auth/poll', 'init', 'programs', 'status', 'test-event', 'stripe-connect']) {
      expect(Object.keys(doc.paths)).toContain(`/api/v1/cli/${path}`);
    }
    const gone = await app.inject({ method: 'POST', url: '/api/v1/cli/stripe-connect', headers: ip() });
    expect(gone.statusCode).toBe(410);
    expect(errorOf(gone)).toMatchObject({ name: 'GoneError' });
    expect(errorOf(gone).message).toMatch(/retired.*dashboard.*program settings/);

    const p = await createTestProgram(app, t.db);
    now = Math.ceil(Date.now() / 60_000) * 60_000 + 1_000; // a fresh window
    const headers = { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() };
    let last;
    for (let i = 0; i < 60; i += 1) last = await app.inject({ method: 'GET', url: '/api/v1/cli/status', headers });
    expect(last!.statusCode).toBe(200);
    expect(last!.headers['x-ratelimit-limit']).toBe('60');
    expect(last!.headers['x-ratelimit-remaining']).toBe('0');
    expect(last!.headers['x-ratelimit-reset']).toBe(String((now - 1_000) / 1000 + 60));
    const limited = await app.inject({ method: 'GET', url: '/api/v1/cli/status', headers: { ...headers, 'x-forwarded-for': freshIp() } });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('rate_limited');
    expect(limited.headers['retry-after']).toBeTruthy();
    expect(limited.headers['x-request-id']).toBeUndefined();
    now = Date.now();
  });
});
