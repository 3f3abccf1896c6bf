/**
 * Issue 27, points 3, 4 and 8: a processor account belongs to the one workspace that proved it,
 * one bad event never fails the others, and test and live never touch each other. PGlite always,
 * Postgres when DATABASE_URL is set.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../core/config.js';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { createSecretBox, loadOrCreateKeyFile, requireSecretsKey } from '../../../core/secret-box.js';
import { buildApp } from '../../../ingest/app.js';
import { createBatchedStatement } from '../../../domain/batched-statement.js';
import { releaseProcessorAccount } from '../../../domain/payments/account-owners.js';
import { memoryRateLimitStore } from '../../../ingest/http/rate-limit.js';
import { buildTestApp, createTestProgram, createTestWorkspace, FEE_BPS, DOCS_BASE_URL, freshIp, PROCESSOR_SECRETS, tableCounts, TEST_SECRETS_KEY, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { accountId, charge, checkoutSession, connectAccount, deliver, dispute, event, id, webhookSecret } from '../../support/processor.js';

const q = {
  sales: sql(
    't.hardening_sales',
    `SELECT s.program_id, s.partner_id, s.status, s.test, s.refunded_cents::int AS refunded,
            (SELECT status FROM commissions c WHERE c.sale_id = s.id) AS commission_status
       FROM sale_events s WHERE s.transaction_id = $1 ORDER BY s.test, s.program_id`,
  ),
  salesOfProgram: sql('t.hardening_sales_of_program', `SELECT count(*)::int AS n FROM sale_events WHERE program_id = $1`),
  owner: sql('t.hardening_owner', `SELECT workspace_id, secret, previous_secret, verified_at FROM processor_account_owners WHERE account_id = $1`),
  counts: sql(
    't.hardening_counts',
    `SELECT (SELECT count(*)::int FROM processor_events) AS events, (SELECT count(*)::int FROM processor_payment_refs) AS refs,
            (SELECT count(*)::int FROM processor_accounts) AS accounts, (SELECT count(*)::int FROM processor_connections) AS connections,
            (SELECT count(*)::int FROM processor_account_owners) AS owners,
            (SELECT count(*)::int FROM processor_account_owners WHERE verified_at IS NOT NULL) AS verified`,
  ),
  // What an older version could leave: the program's connection made by PUT alone, with no proof.
  legacyConnection: sql('t.hardening_legacy_connection', `INSERT INTO processor_connections (program_id, account_id) VALUES ($1, $2)`),
  oldEvent: sql(
    't.hardening_old_event',
    `INSERT INTO processor_events (event_id, event_type, livemode, outcome, program_id, event_created_at)
     VALUES ($1, 'checkout.session.completed', true, 'skipped', $2, to_timestamp($3::double precision))`,
  ),
};

describe('SECRETS_KEY: what seals the processor accounts\' secrets', () => {
  it('the distributed ingest refuses to start without one; relay, loader and the embedded start do not need it; a bad one is refused', () => {
    const distributed = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' };
    expect(() => requireSecretsKey(loadConfig(distributed))).toThrow(/SECRETS_KEY: required with DATABASE_URL for the ingest role/);
    expect(() => requireSecretsKey(loadConfig({ ...distributed, SECRETS_KEY: randomBytes(32).toString('base64') }))).not.toThrow();
    expect(() => requireSecretsKey(loadConfig({ ...distributed, KAFKA_BROKERS: '127.0.0.1:9092' }, { service: 'relay' }))).not.toThrow();
    expect(() => requireSecretsKey(loadConfig({}))).not.toThrow();
    expect(() => loadConfig({ SECRETS_KEY: randomBytes(16).toString('base64') })).toThrow(/SECRETS_KEY: must be 32 random bytes in base64/);
    expect(() => loadConfig({ SECRETS_KEY: `${randomBytes(32).toString('base64').slice(0, -2)}!!` })).toThrow(/not base64/);
    expect(loadConfig({ DATA_DIR: '/tmp/x/' }).secrets.keyFile).toBe('/tmp/x/secrets.key');
  });

  it('the embedded start makes its key file once (0600) and reads the same key afterwards', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ats-secrets-key-'));
    try {
      const file = join(dir, 'secrets.key');
      const [first, second] = await Promise.all([loadOrCreateKeyFile(file), loadOrCreateKeyFile(file)]);
      expect(first.length).toBe(32);
      expect(second.equals(first)).toBe(true);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await loadOrCreateKeyFile(file)).equals(first)).toBe(true);
      const sealed = createSecretBox(first).seal('whsec_round_trip_secret_value', 'ctx');
      expect(createSecretBox(await loadOrCreateKeyFile(file)).open(sealed, 'ctx')).toBe('whsec_round_trip_secret_value');
      expect(() => createSecretBox(first).open(sealed, 'another ctx')).toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe.each(databaseKinds())('processor webhooks, issue 27, on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  const logs: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    // As buildTestApp, with the log lines kept (no secret may reach them).
    app = await buildApp({
      db: t.db,
      rateLimits: memoryRateLimitStore(),
      logger: createLogger('debug', { write: (line: string) => void logs.push(line) }),
      trustProxy: ['127.0.0.1'],
      tracking: { platformFeeBps: FEE_BPS, docsBaseUrl: DOCS_BASE_URL },
      processorWebhookSecrets: () => PROCESSOR_SECRETS,
      secretBox: createSecretBox(TEST_SECRETS_KEY),
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const post = (url: string, payload: object, key?: string) =>
    app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload });
  const newClick = async (p: TestProgram) =>
    (await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${p.affCode}` })).json().click_id as string;
  const owner = (p: TestProgram) => ({ authorization: `Bearer ${p.workspace.ownerToken}` });
  const put = (p: TestProgram, payload: object) =>
    app.inject({ method: 'PUT', url: `/api/tracking/programs/${p.programId}/processor-connection`, headers: owner(p), payload });
  const connection = async (p: TestProgram) =>
    (await app.inject({ method: 'GET', url: `/api/tracking/programs/${p.programId}/processor-connection`, headers: owner(p) })).json().data;
  const counts = async () => ({
    ...(await tableCounts(t.db)),
    ...(await t.db.one<{ events: number; refs: number; accounts: number; connections: number; owners: number; verified: number }>(q.counts))!,
  });
  const ok = async (evt: object, o: Parameters<typeof deliver>[2] = {}) => {
    const res = await deliver(app, evt, o);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { outcome: string; reason: string | null };
  };
  const sales = (transactionId: string) =>
    t.db.many<{ program_id: number; partner_id: number | null; status: string; test: boolean; refunded: number; commission_status: string | null }>(q.sales, [transactionId]);
  const salesOf = async (p: TestProgram) => (await t.db.one<{ n: number }>(q.salesOfProgram, [p.programId]))!.n;
  const paid = async (p: TestProgram, o: { account?: string; to?: string; secret?: string; named?: boolean } = {}) => {
    const session = checkoutSession({ metadata: { ...(o.named === false ? {} : { program_id: String(p.programId) }), svc_click_id: await newClick(p) } });
    return { session, result: await ok(event('checkout.session.completed', session, o.account ? { account: o.account } : {}), { to: o.to, secret: o.secret }) };
  };

  describe('point 3: a processor account belongs to the one workspace that proved it', () => {
    it('connecting takes the account id and its webhook secret; pending until the first signed event on the account URL; the secret is sealed and never answered', async () => {
      const a = await createTestProgram(app, t.db);
      const acct = accountId();
      const secret = webhookSecret();
      const refused = await put(a, { account_id: acct });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error.message).toBe("webhook_secret must be the signing secret of the account's webhook endpoint (whsec_...)");
      expect((await put(a, { account_id: acct, webhook_secret: 'not-a-secret' })).statusCode).toBe(400);

      const res = await put(a, { account_id: acct, webhook_secret: secret });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data).toMatchObject({
        processorConnectionStatus: 'pending_verification', isProcessorConnected: false, methodReady: false, processorAccountId: acct,
        webhookUrl: `http://localhost:80/api/v1/webhooks/processor/${acct}`,
      });
      expect(res.body).not.toContain(secret);
      const status = await app.inject({ method: 'GET', url: `/api/tracking/status/${a.programId}`, headers: owner(a) });
      expect(status.json().data.stepStatuses.payments).toBe('pending');
      const pending = await app.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: { authorization: `Bearer ${a.apiKey}` } });
      expect(pending.json().data.checks.find((c: { name: string }) => c.name === 'payment_tracking')).toEqual({
        name: 'payment_tracking', ok: false,
        detail: `The processor account ${acct} is waiting for its first signed event: point its webhook endpoint at /api/v1/webhooks/processor/${acct}.`,
      });

      // Sealed at rest: neither the secret nor its bytes in any encoding are in the row; it opens with the key.
      const row = (await t.db.one<{ workspace_id: number; secret: string; verified_at: Date | null }>(q.owner, [acct]))!;
      expect(Number(row.workspace_id)).toBe(a.workspace.workspaceId);
      expect(row.verified_at).toBeNull();
      for (const form of [secret, secret.slice(6), Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url'), Buffer.from(secret).toString('hex')]) {
        expect(row.secret).not.toContain(form);
      }
      expect(createSecretBox(TEST_SECRETS_KEY).open(row.secret, `processor-webhook-secret:${acct}`)).toBe(secret);
      expect(() => createSecretBox(Buffer.alloc(32, 9)).open(row.secret, `processor-webhook-secret:${acct}`)).toThrow();

      // The account URL takes the account's own secret only: not the operator's, not another.
      const before = await counts();
      for (const other of [PROCESSOR_SECRETS[0]!, webhookSecret()]) {
        const wrong = await deliver(app, event('customer.created', { id: id('cus') }), { to: acct, secret: other });
        expect(wrong.statusCode).toBe(400);
        expect(wrong.json().error.message).toBe('Invalid processor signature');
      }
      expect(await counts()).toEqual(before);
      expect((await connection(a)).processorConnectionStatus).toBe('pending_verification');

      expect(await ok(event('customer.created', { id: id('cus') }), { to: acct, secret })).toMatchObject({ outcome: 'ignored' });
      const read = await app.inject({ method: 'GET', url: `/api/tracking/programs/${a.programId}/processor-connection`, headers: owner(a) });
      expect(read.json().data).toMatchObject({ processorConnectionStatus: 'connected', isProcessorConnected: true, methodReady: true });
      expect(read.body).not.toContain(secret);
      const readiness = await app.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: { authorization: `Bearer ${a.apiKey}` } });
      expect(readiness.json().data.checks.find((c: { name: string }) => c.name === 'payment_tracking')).toMatchObject({ ok: true });

      // Its events reach its program without program_id in the metadata.
      const { session, result } = await paid(a, { to: acct, secret, named: false });
      expect(result).toMatchObject({ outcome: 'recorded' });
      expect(await sales(session.payment_intent as string)).toMatchObject([{ program_id: a.programId, partner_id: a.partnerId }]);
      // No log line ever held the secret, in any request above.
      expect(logs.length).toBeGreaterThan(0);
      expect(logs.filter((l) => l.includes(secret) || l.includes(secret.slice(6)))).toEqual([]);
    });

    it("another workspace cannot connect a verified account: 409, and nothing is written", async () => {
      const a = await createTestProgram(app, t.db);
      const b = await createTestProgram(app, t.db);
      const acct = accountId();
      await connectAccount(app, a, acct, webhookSecret());
      const before = await counts();
      const res = await put(b, { account_id: acct, webhook_secret: webhookSecret() });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({
        data: null,
        error: { status: 409, name: 'ConflictError', message: 'This processor account is connected to another workspace', details: {} },
      });
      expect(await counts()).toEqual(before);
      expect((await connection(b)).processorConnectionStatus).toBe('not_connected');
      expect((await connection(a)).processorConnectionStatus).toBe('connected');
    });

    it("the attack of the issue: B's claim never receives A's events, and never makes A's events skipped", async () => {
      const a = await createTestProgram(app, t.db);
      const b = await createTestProgram(app, t.db);
      const acct = accountId();
      const bSecret = webhookSecret();
      // B claims A's account first, with a secret of its own, and never proves it.
      await connectAccount(app, b, acct, bSecret, { verify: false });
      // The account's own events, sent by the processor to the operator's URL (Connect), are nobody's yet.
      const early = await paid(a, { account: acct, named: false });
      expect(early.result).toMatchObject({ outcome: 'skipped', reason: 'account_not_verified' });
      expect((await paid(a, { account: acct })).result).toMatchObject({ outcome: 'skipped', reason: 'account_not_verified' });
      expect(await salesOf(b)).toBe(0);

      // A connects with the account's real secret: B's unproven claim is replaced, and A proves it.
      const aSecret = webhookSecret();
      await connectAccount(app, a, acct, aSecret);
      expect((await connection(a)).processorConnectionStatus).toBe('connected');
      expect((await connection(b)).processorConnectionStatus).toBe('pending_verification');
      const forged = await deliver(app, event('customer.created', { id: id('cus') }), { to: acct, secret: bSecret });
      expect(forged.statusCode).toBe(400);

      // Now A's events land in A's program, on either URL; B gets none of them, whatever they name.
      const viaOperator = await paid(a, { account: acct });
      expect(viaOperator.result).toMatchObject({ outcome: 'recorded' });
      expect(await sales(viaOperator.session.payment_intent as string)).toMatchObject([{ program_id: a.programId, partner_id: a.partnerId }]);
      const viaAccount = await paid(a, { to: acct, secret: aSecret, named: false });
      expect(viaAccount.result).toMatchObject({ outcome: 'recorded' });
      expect(await sales(viaAccount.session.payment_intent as string)).toMatchObject([{ program_id: a.programId }]);
      // On the operator's URL an account's event must name its program: no claim can draw an unnamed payment.
      expect((await paid(a, { account: acct, named: false })).result).toMatchObject({ outcome: 'skipped', reason: 'program_id_missing' });
      const namingB = checkoutSession({ metadata: { program_id: String(b.programId), svc_click_id: await newClick(b) } });
      expect(await ok(event('checkout.session.completed', namingB, { account: acct }))).toMatchObject({ outcome: 'skipped', reason: 'program_not_connected' });
      expect(await ok(event('checkout.session.completed', checkoutSession({ metadata: namingB.metadata as Record<string, string> })), { to: acct, secret: aSecret })).toMatchObject({
        outcome: 'skipped', reason: 'program_not_connected',
      });
      expect(await salesOf(b)).toBe(0);
    });

    it("a connection an older version made without proof neither receives the account's events nor makes them skipped", async () => {
      const a = await createTestProgram(app, t.db);
      const b = await createTestProgram(app, t.db);
      const acct = accountId();
      await t.db.many(q.legacyConnection, [b.programId, acct]);
      expect((await connection(b)).processorConnectionStatus).toBe('pending_verification');
      const aSecret = webhookSecret();
      await connectAccount(app, a, acct, aSecret);
      // One program of A's workspace is connected: unnamed events on the account URL are its, B's row notwithstanding.
      const unnamed = await paid(a, { to: acct, secret: aSecret, named: false });
      expect(unnamed.result).toMatchObject({ outcome: 'recorded' });
      expect(await sales(unnamed.session.payment_intent as string)).toMatchObject([{ program_id: a.programId, partner_id: a.partnerId }]);
      // Refunds and disputes of B's sales are not the account's to make.
      const own = checkoutSession({ metadata: { program_id: String(b.programId), svc_click_id: await newClick(b) } });
      expect(await ok(event('checkout.session.completed', own))).toMatchObject({ outcome: 'recorded' });
      const pi = own.payment_intent as string;
      expect(await ok(event('charge.dispute.created', dispute({ charge: id('ch'), payment_intent: pi })), { to: acct, secret: aSecret })).toMatchObject({
        outcome: 'skipped', reason: 'program_not_connected',
      });
      expect(await ok(event('charge.refunded', charge({ payment_intent: pi }), { account: acct }))).toMatchObject({ outcome: 'skipped', reason: 'program_not_connected' });
      expect(await sales(pi)).toMatchObject([{ program_id: b.programId, status: 'paid', commission_status: 'pending' }]);
    });

    it('an event whose account is not the URL\'s is 400, an unknown account is refused as a bad signature, and neither writes', async () => {
      const a = await createTestProgram(app, t.db);
      const acct = accountId();
      const secret = webhookSecret();
      await connectAccount(app, a, acct, secret);
      const before = await counts();
      const other = await deliver(app, event('checkout.session.completed', checkoutSession({ metadata: {} }), { account: accountId() }), { to: acct, secret });
      expect(other.statusCode).toBe(400);
      expect(other.json().error.message).toBe("The event's account is not the account of this webhook URL");
      for (const path of [accountId(), 'not-an-account']) {
        const unknown = await deliver(app, event('customer.created', { id: id('cus') }), { to: path, secret });
        expect(unknown.statusCode).toBe(400);
        expect(unknown.json()).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message: 'Invalid processor signature', details: {} } });
      }
      // account.updated on an account's URL reports on that account only.
      expect(await ok(event('account.updated', { id: accountId(), object: 'account', charges_enabled: true }), { to: acct, secret })).toMatchObject({
        outcome: 'skipped', reason: 'other_account',
      });
      expect(await counts()).toEqual({ ...before, events: before.events + 1 });
    });

    it('rotation: a new secret for the same account; the previous one is accepted for 24 hours, then refused', async () => {
      const a = await createTestProgram(app, t.db);
      const acct = accountId();
      const first = webhookSecret();
      await connectAccount(app, a, acct, first);
      // A second program of the same workspace joins the account with a new secret: a rotation, not a take-over.
      const second = await createTestProgram(app, t.db, {}, a.workspace);
      const next = webhookSecret();
      const res = await put(second, { account_id: acct, webhook_secret: next });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.processorConnectionStatus).toBe('connected');
      const row = (await t.db.one<{ secret: string; previous_secret: string }>(q.owner, [acct]))!;
      expect(row.previous_secret).not.toContain(first);
      for (const secret of [first, next]) expect(await ok(event('customer.created', { id: id('cus') }), { to: acct, secret })).toMatchObject({ outcome: 'ignored' });

      const later = Date.now() + 25 * 3_600_000;
      const tomorrow = await buildTestApp(t.db, memoryRateLimitStore(), () => later);
      try {
        const timestamp = Math.floor(later / 1000);
        expect((await deliver(tomorrow, event('customer.created', { id: id('cus') }), { to: acct, secret: first, timestamp })).statusCode).toBe(400);
        expect((await deliver(tomorrow, event('customer.created', { id: id('cus') }), { to: acct, secret: next, timestamp })).statusCode).toBe(200);
      } finally {
        await tomorrow.close();
      }
      // With two programs connected, an unnamed payment is nobody's; a named one is its program's.
      expect((await paid(second, { to: acct, secret: next, named: false })).result).toMatchObject({ outcome: 'skipped', reason: 'program_id_missing' });
      expect((await paid(second, { to: acct, secret: next })).result).toMatchObject({ outcome: 'recorded' });
    });

    it('disconnecting the last program gives the account up: another workspace may connect it then', async () => {
      const a = await createTestProgram(app, t.db);
      const b = await createTestProgram(app, t.db);
      const acct = accountId();
      await connectAccount(app, a, acct, webhookSecret());
      expect((await put(b, { account_id: acct, webhook_secret: webhookSecret() })).statusCode).toBe(409);
      const del = await app.inject({ method: 'DELETE', url: `/api/tracking/programs/${a.programId}/processor-connection`, headers: owner(a) });
      expect(del.json().data).toMatchObject({ processorConnectionStatus: 'not_connected', webhookUrl: null });
      expect(await t.db.one(q.owner, [acct])).toBeUndefined();
      expect((await put(b, { account_id: acct, webhook_secret: webhookSecret() })).statusCode).toBe(200);
    });

    it('a squatter who verified with a secret of its own is released by the operator; the holder then connects', async () => {
      const holder = await createTestProgram(app, t.db);
      const squatter = await createTestProgram(app, t.db);
      const acct = accountId();
      // The squatter chose its secret, so it can sign the "first event" itself: verified, and the holder is refused.
      await connectAccount(app, squatter, acct, webhookSecret());
      expect((await put(holder, { account_id: acct, webhook_secret: webhookSecret() })).statusCode).toBe(409);

      expect(await releaseProcessorAccount(t.db, acct)).toEqual({ workspaceId: squatter.workspace.workspaceId, programs: 1 });
      expect(await t.db.one(q.owner, [acct])).toBeUndefined();
      expect((await connection(squatter)).processorConnectionStatus).toBe('not_connected');
      expect(await releaseProcessorAccount(t.db, acct)).toBeUndefined();

      const secret = webhookSecret();
      await connectAccount(app, holder, acct, secret);
      expect((await connection(holder)).processorConnectionStatus).toBe('connected');
      expect((await paid(holder, { to: acct, secret, named: false })).result).toMatchObject({ outcome: 'recorded' });
    });

    it("what a claimant's own URL reported about the account is not inherited by the next claimant", async () => {
      const a = await createTestProgram(app, t.db);
      const b = await createTestProgram(app, t.db);
      const acct = accountId();
      const bSecret = webhookSecret();
      await connectAccount(app, b, acct, bSecret, { verify: false });
      const far = 4_000_000_000;
      await ok(event('account.updated', { id: acct, object: 'account', charges_enabled: true, payouts_enabled: true }, { created: far }), { to: acct, secret: bSecret });
      await ok(event('account.application.deauthorized', { id: 'ca_x', object: 'application' }, { created: far }), { to: acct, secret: bSecret });
      expect((await connection(b)).processorConnectionStatus).toBe('deauthorized');
      await app.inject({ method: 'DELETE', url: `/api/tracking/programs/${b.programId}/processor-connection`, headers: owner(b) });
      const aSecret = webhookSecret();
      await connectAccount(app, a, acct, aSecret);
      expect(await connection(a)).toMatchObject({ processorConnectionStatus: 'connected', chargesEnabled: false, payoutsEnabled: false });
      expect((await paid(a, { to: acct, secret: aSecret, named: false })).result).toMatchObject({ outcome: 'recorded' });
    });

    it('a member cannot connect, and a workspace without programs on the account has no say', async () => {
      const a = await createTestProgram(app, t.db);
      const member = await app.inject({
        method: 'PUT', url: `/api/tracking/programs/${a.programId}/processor-connection`, headers: { authorization: `Bearer ${a.workspace.memberToken}` },
        payload: { account_id: accountId(), webhook_secret: webhookSecret() },
      });
      expect(member.statusCode).toBe(403);
      const stranger = await createTestWorkspace(t.db);
      const foreign = await app.inject({
        method: 'PUT', url: `/api/tracking/programs/${a.programId}/processor-connection`, headers: { authorization: `Bearer ${stranger.ownerToken}` },
        payload: { account_id: accountId(), webhook_secret: webhookSecret() },
      });
      expect(foreign.statusCode).toBe(403);
    });
  });

  describe('point 4: one bad event never fails others', () => {
    it('each kind of bad value gets its own 400 and writes nothing', async () => {
      const a = await createTestProgram(app, t.db);
      const good = () => checkoutSession({ metadata: { program_id: String(a.programId), svc_customer_key: 'k' } });
      const now = Math.floor(Date.now() / 1000);
      const text = 'The event carries text that cannot be stored (a NUL character or an unpaired surrogate)';
      const created = 'The event created time must be whole unix seconds from 2000-01-01 to 2100-01-01';
      const cases: [string, object, string][] = [
        ['NUL in the event id', event('checkout.session.completed', good(), { eventId: `evt_a\u0000b` }), text],
        ['lone surrogate in the event id', event('checkout.session.completed', good(), { eventId: `evt_\ud800x` }), text],
        ['NUL in metadata', event('checkout.session.completed', checkoutSession({ metadata: { program_id: String(a.programId), svc_customer_key: 'k\u0000' } })), text],
        ['lone surrogate in metadata', event('checkout.session.completed', checkoutSession({ metadata: { program_id: String(a.programId), svc_click_id: '\udc00' } })), text],
        ['NUL in a refund\'s payment id', event('charge.refunded', charge({ payment_intent: 'pi_\u0000' })), text],
        ['NUL in a field not read', event('charge.refunded', { ...charge({ payment_intent: id('pi') }), description: 'a\u0000b' }), text],
        ['lone surrogate in a key', event('customer.created', { id: id('cus'), metadata: { '\ud83d': 'x' } }), text],
        ['created negative', event('checkout.session.completed', good(), { created: -62_198_755_200 }), created],
        ['created -1', event('checkout.session.completed', good(), { created: -1 }), created],
        ['created huge', event('checkout.session.completed', good(), { created: 1e15 }), created],
        ['created after 2100', event('checkout.session.completed', good(), { created: 4_102_444_801 }), created],
        ['created not whole', event('checkout.session.completed', good(), { created: now + 0.5 }), created],
      ];
      const before = await counts();
      for (const [name, evt, message] of cases) {
        const res = await deliver(app, evt);
        expect(res.statusCode, `${name}: ${res.body}`).toBe(400);
        expect(res.json().error.message, name).toBe(message);
      }
      expect(await counts()).toEqual(before);
    });

    it('15 valid payments and one bad event delivered together: the 15 recorded, the bad one 400, nothing else affected', async () => {
      const a = await createTestProgram(app, t.db);
      const sessions = await Promise.all(
        Array.from({ length: 15 }, async () => checkoutSession({ metadata: { program_id: String(a.programId), svc_click_id: await newClick(a) } })),
      );
      const bad = event('checkout.session.completed', checkoutSession({ metadata: { program_id: String(a.programId), svc_click_id: 'x\u0000' } }));
      // All at once, the bad one first, so it reaches the payment writer with the others (a group-commit batch holds 15).
      const deliveries = [bad, ...sessions.map((s) => event('checkout.session.completed', s))];
      const results = await Promise.all(deliveries.map((e) => deliver(app, e)));
      expect(results[0]!.statusCode).toBe(400);
      expect(results[0]!.json().error.message).toBe('The event carries text that cannot be stored (a NUL character or an unpaired surrogate)');
      expect(results.slice(1).map((r) => [r.statusCode, r.json().data?.outcome])).toEqual(sessions.map(() => [200, 'recorded']));
      expect(await salesOf(a)).toBe(15);
      for (const s of sessions) expect(await sales(s.payment_intent as string)).toMatchObject([{ program_id: a.programId, status: 'paid' }]);
    });

    it('the events list answers whatever created an older version stored', async () => {
      const a = await createTestProgram(app, t.db);
      for (const seconds of [-5, -62_198_755_200, -200_000_000_000, 1_700_000_000]) await t.db.many(q.oldEvent, [id('evt'), a.programId, seconds]);
      const res = await app.inject({ method: 'GET', url: `/api/tracking/programs/${a.programId}/processor-events`, headers: owner(a) });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data.map((e: { event_created_at: string }) => e.event_created_at).sort()).toEqual(
        ['-000001-01-01T00:00:00.000Z', '-004368-04-02T04:26:40.000Z', '1969-12-31T23:59:55.000Z', '2023-11-14T22:13:20.000Z'].sort(),
      );
    });

    it('a batch statement that fails because of one item is retried item by item: only that item fails', async () => {
      let statements = 0;
      const double = createBatchedStatement<string, number>(
        async (items) => {
          statements += 1;
          const row = await t.db.one<{ out: number[] }>(
            sql('t.hardening_batch', `SELECT array_agg((v #>> '{}')::int * 2 ORDER BY n) AS out FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(v, n)`),
            [JSON.stringify(items)],
          );
          return row!.out.map((value) => ({ ok: true as const, value }));
        },
        { maxBatch: 15, maxInFlight: 1 },
      );
      const results = await Promise.allSettled(['1', '2', 'three', '4'].map((item) => double(item)));
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as { code?: string }).code))).toEqual([2, 4, '22P02', 8]);
      // One batch, then each of its items alone.
      expect(statements).toBe(5);

      // A failure that is not the statement's own (the connection, the server) is not retried: nothing tells whether it committed.
      let calls = 0;
      const lost = createBatchedStatement<string, number>(
        async () => {
          calls += 1;
          throw Object.assign(new Error('Connection terminated unexpectedly'), {});
        },
        { maxBatch: 15, maxInFlight: 1 },
      );
      const gone = await Promise.allSettled(['1', '2'].map((item) => lost(item)));
      expect(gone.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect(calls).toBe(1);
    });
  });

  describe('point 8: test and live never touch each other', () => {
    /** A live sale and a test sale of the program under one payment intent. */
    const twins = async (p: TestProgram) => {
      const pi = id('pi');
      const meta = { program_id: String(p.programId), svc_click_id: await newClick(p) };
      expect(await ok(event('checkout.session.completed', checkoutSession({ payment_intent: pi, metadata: meta })))).toMatchObject({ outcome: 'recorded' });
      expect(await ok(event('checkout.session.completed', checkoutSession({ payment_intent: pi, livemode: false, metadata: meta }), { livemode: false }))).toMatchObject({
        outcome: 'recorded',
      });
      expect((await sales(pi)).map((s) => [s.test, s.status])).toEqual([[false, 'paid'], [true, 'paid']]);
      return pi;
    };

    it('a test-mode dispute or refund never reverses the live sale sharing its payment intent', async () => {
      const a = await createTestProgram(app, t.db);
      const pi = await twins(a);
      const chargeId = id('ch');
      expect(await ok(event('charge.refunded', charge({ id: chargeId, payment_intent: pi, amount: 5_000, amount_refunded: 1_000 }), { livemode: false }))).toMatchObject({
        outcome: 'recorded',
      });
      expect(await sales(pi)).toMatchObject([{ test: false, status: 'paid', refunded: 0, commission_status: 'pending' }, { test: true, refunded: 1_000 }]);
      expect(await ok(event('charge.dispute.created', dispute({ charge: chargeId, payment_intent: pi }), { livemode: false }))).toMatchObject({ outcome: 'recorded' });
      expect(await sales(pi)).toMatchObject([{ test: false, status: 'paid', commission_status: 'pending' }, { test: true, status: 'chargeback' }]);
      // The live dispute reverses the live sale.
      expect(await ok(event('charge.dispute.created', dispute({ charge: id('ch'), payment_intent: pi })))).toMatchObject({ outcome: 'recorded' });
      expect(await sales(pi)).toMatchObject([{ test: false, status: 'chargeback', commission_status: 'reversed' }, { test: true, status: 'chargeback' }]);
    });

    it('a live refund or dispute never reverses the test sale sharing its payment intent', async () => {
      const a = await createTestProgram(app, t.db);
      const pi = await twins(a);
      expect(await ok(event('charge.refunded', charge({ payment_intent: pi, amount: 5_000, amount_refunded: 2_000 })))).toMatchObject({ outcome: 'recorded' });
      expect(await ok(event('charge.dispute.created', dispute({ charge: id('ch'), payment_intent: pi })))).toMatchObject({ outcome: 'recorded' });
      expect(await sales(pi)).toMatchObject([{ test: false, status: 'chargeback', refunded: 2_000 }, { test: true, status: 'paid', refunded: 0 }]);
    });

    it('a refund waiting for its payment is applied only by a payment of its own mode', async () => {
      const a = await createTestProgram(app, t.db);
      const pi = id('pi');
      const meta = { program_id: String(a.programId), svc_click_id: await newClick(a) };
      // A live refund waits; the test payment under the same id arrives: it stays waiting, the test sale stays paid.
      expect(await ok(event('charge.refunded', charge({ payment_intent: pi })))).toMatchObject({ outcome: 'waiting' });
      expect(await ok(event('checkout.session.completed', checkoutSession({ payment_intent: pi, livemode: false, metadata: meta }), { livemode: false }))).toMatchObject({
        outcome: 'recorded',
      });
      expect(await sales(pi)).toMatchObject([{ test: true, status: 'paid' }]);
      // A test refund waits for another id; the live payment of that id leaves it waiting and its sale paid.
      const pi2 = id('pi');
      expect(await ok(event('charge.refunded', charge({ payment_intent: pi2 }), { livemode: false }))).toMatchObject({ outcome: 'waiting' });
      expect(await ok(event('checkout.session.completed', checkoutSession({ payment_intent: pi2, metadata: { ...meta, svc_click_id: await newClick(a) } })))).toMatchObject({
        outcome: 'recorded',
      });
      expect(await sales(pi2)).toMatchObject([{ test: false, status: 'paid', commission_status: 'pending' }]);
      // The live payment of the first id: its own refund, waiting all along, applies.
      expect(await ok(event('checkout.session.completed', checkoutSession({ payment_intent: pi, metadata: { ...meta, svc_click_id: await newClick(a) } })))).toMatchObject({
        outcome: 'recorded',
      });
      expect(await sales(pi)).toMatchObject([{ test: false, status: 'refunded' }, { test: true, status: 'paid' }]);
    });

    it('/track/refund still reverses the real sale first (its request names no mode)', async () => {
      const a = await createTestProgram(app, t.db);
      const pi = await twins(a);
      const res = await post('/api/v1/track/refund', { transaction_id: pi }, a.apiKey);
      expect(res.statusCode).toBe(200);
      expect(await sales(pi)).toMatchObject([{ test: false, status: 'refunded' }, { test: true, status: 'paid' }]);
    });
  });
});
