/**
 * Where deliveries may go (issue 32, point 5), against real receivers: a host name that resolves to
 * a private address when the connection is opened (DNS rebinding) is refused then, though it passed
 * at creation; over HTTPS the connection goes to the checked address with the certificate checked
 * for the host name; no redirect is followed; a long answer is read only up to its limit; a silent
 * receiver times out.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { MAX_RESPONSE_BYTES } from '../../../processors/webhooks/sender.js';
import { createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { selfSignedCertificate, startReceiver, type Receiver } from '../../support/webhook-receiver.js';
import { buildWebhookApp, eventually, startInProcessWebhooks } from '../../support/webhooks.js';

const HOST = 'hooks.brand.test';

describe.each(databaseKinds())('delivery safety on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  let tls: { key: string; cert: string };
  const closing: { close?(): Promise<void>; stop?(): Promise<void> }[] = [];
  // DNS as the test says: a public address when the endpoint is created, loopback when connecting.
  let answer = ['8.8.8.8'];
  const resolve = async () => answer;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildWebhookApp(t.db, { allowPrivateUrls: false, resolve });
    program = await createTestProgram(app, t.db);
    tls = selfSignedCertificate([HOST]);
  }, 120_000);
  afterEach(async () => {
    for (const c of closing.splice(0)) await (c.stop ? c.stop() : c.close!());
    await t.db.many(sql('test.safety_reset', `DELETE FROM webhook_endpoints`));
    answer = ['8.8.8.8'];
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const owner = () => ({ authorization: `Bearer ${program.workspace.ownerToken}` });
  async function create(url: string) {
    const res = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints`, headers: owner(), payload: { url, events: ['sale.recorded'] } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as { id: string; secret: string };
  }
  async function ping(endpointId: string) {
    const res = await app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/webhook-endpoints/${endpointId}/test`, headers: owner() });
    expect(res.statusCode, res.body).toBe(202);
  }
  const attempts = (endpointId: string) =>
    t.db.many<{ status_code: number | null; error: string | null; response_body: string | null; duration_ms: number }>(
      sql('test.safety_attempts', `SELECT status_code, error, response_body, duration_ms FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id`),
      [endpointId],
    );
  async function httpsReceiver(): Promise<Receiver> {
    const r = await startReceiver({ tls });
    closing.push(r);
    return r;
  }

  it('refuses at connect time a host that now resolves to a private address (DNS rebinding)', async () => {
    const r = await httpsReceiver();
    const ep = await create(`https://${HOST}:${r.port}/hooks`);
    answer = ['127.0.0.1'];
    const workers = startInProcessWebhooks(t.db, { allowPrivate: false, resolve, ca: tls.cert });
    closing.push(workers);
    await ping(ep.id);
    const [attempt] = await eventually(() => attempts(ep.id), (rows) => rows.length >= 1);
    expect(attempt).toMatchObject({ status_code: null, error: 'EREFUSEDADDRESS: refused address: 127.0.0.1 is loopback' });
    expect(r.received).toHaveLength(0);
  });

  it('refuses a host answering a public and a private address', async () => {
    const r = await httpsReceiver();
    const ep = await create(`https://${HOST}:${r.port}/hooks`);
    answer = ['8.8.8.8', '169.254.169.254'];
    const workers = startInProcessWebhooks(t.db, { allowPrivate: false, resolve, ca: tls.cert });
    closing.push(workers);
    await ping(ep.id);
    const [attempt] = await eventually(() => attempts(ep.id), (rows) => rows.length >= 1);
    expect(attempt!.error).toContain('169.254.169.254 is metadata');
    expect(r.received).toHaveLength(0);
  });

  it('delivers over HTTPS to the checked address, the certificate checked for the host name', async () => {
    const r = await httpsReceiver();
    const ep = await create(`https://${HOST}:${r.port}/hooks`);
    // Allowed only because the operator allows private addresses (this worker); the name still decides TLS.
    const workers = startInProcessWebhooks(t.db, { allowPrivate: true, resolve: async () => ['127.0.0.1'], ca: tls.cert });
    closing.push(workers);
    await ping(ep.id);
    await eventually(() => r.received.length, (n) => n >= 1);
    expect(r.verified(ep.secret)[0]!.type).toBe('webhook.test');
    expect(r.received[0]!.headers.host).toBe(`${HOST}:${r.port}`);
  });

  it('follows no redirect, reads at most the limit of an answer, and gives up on a silent receiver', async () => {
    const r = await httpsReceiver();
    const ep = await create(`https://${HOST}:${r.port}/hooks`);
    const workers = startInProcessWebhooks(t.db, { allowPrivate: true, resolve: async () => ['127.0.0.1'], ca: tls.cert, timeoutMs: 500 });
    closing.push(workers);
    r.behaviour.status = 302;
    r.behaviour.headers = { location: `https://${HOST}:${r.port}/elsewhere` };
    await ping(ep.id);
    await eventually(() => attempts(ep.id), (rows) => rows.length >= 1);
    r.behaviour.status = 200;
    r.behaviour.headers = {};
    r.behaviour.body = 'x'.repeat(1_000_000);
    await ping(ep.id);
    await eventually(() => attempts(ep.id), (rows) => rows.length >= 2);
    r.behaviour.delayMs = 3_000;
    await ping(ep.id);
    const rows = await eventually(() => attempts(ep.id), (rows) => rows.length >= 3, 10_000);
    expect(rows[0]!.status_code).toBe(302);
    // Three pings, none of them followed to /elsewhere.
    expect(r.received).toHaveLength(3);
    expect(r.received.every((x) => x.headers['webhook-id'])).toBe(true);
    expect(rows[1]).toMatchObject({ status_code: 200 });
    expect(rows[1]!.response_body!.length).toBe(MAX_RESPONSE_BYTES);
    expect(rows[2]).toMatchObject({ status_code: null, error: 'ETIMEDOUT: no answer within 500 ms' });
    expect(rows[2]!.duration_ms).toBeGreaterThanOrEqual(490);
    expect(rows[2]!.duration_ms).toBeLessThan(2_000);
  }, 30_000);
});
