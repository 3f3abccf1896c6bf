import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../core/log.js';
import { demoBannerLines, ensureDemo } from '../../../domain/demo.js';
import { createTestDatabase, databaseKinds } from '../../support/databases.js';

/** The lines a logger really writes. */
function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger('info', sink), text: () => lines.join('\n') };
}

const SECRETS = {
  idToken: 'eyJhbGciOiJSUzI1NiJ9.payload.signature',
  axiosAuth: 'Bearer aff_AxiosHeaderKey0123456789abcdefgh',
  requestAuth: 'Bearer dsh_RequestHeaderToken0123456789abcd',
  rawHeader: 'cli_RawHeaderLoginToken0123456789',
  stripeSignature: 't=1732300000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd',
  pgPassword: 'pg-Pass-w0rd',
  redisPassword: 'redis-s3cret',
  kafkaPassword: 'kafka-s3cret',
  webhookSecret: 'whsec_0123456789abcdefghijklmnop',
  clickhousePassword: 'ch-s3cret',
};

describe('log redaction (the written line)', () => {
  it('hides id_tokens, nested authorization headers, Stripe signatures, webhook secrets and URL passwords', () => {
    const { logger, text } = capture();
    const err = Object.assign(new Error(`connect ECONNREFUSED postgres://app:${SECRETS.pgPassword}@db.internal:5432/ats`), {
      config: { url: 'https://oidc.example/token', headers: { Authorization: SECRETS.axiosAuth } },
      request: { headers: { authorization: SECRETS.requestAuth }, _header: `POST /token HTTP/1.1\r\nAuthorization: Bearer ${SECRETS.rawHeader}\r\n` },
      response: { data: { id_token: SECRETS.idToken } },
    });
    logger.error({ err }, 'token exchange failed');
    logger.info({ id_token: SECRETS.idToken, login: { id_token: SECRETS.idToken } }, 'cli login');
    logger.warn({ req: { headers: { 'stripe-signature': SECRETS.stripeSignature } }, headers: { 'stripe-signature': SECRETS.stripeSignature } }, 'signature mismatch');
    logger.info({ credentials: { processorWebhookSecret: SECRETS.webhookSecret }, webhookSecret: SECRETS.webhookSecret }, 'demo');
    logger.info(
      {
        redis: `redis://:${SECRETS.redisPassword}@redis:6379`,
        kafka: { brokers: ['kafka:9092'], sasl: { mechanism: 'plain', username: 'svc', password: SECRETS.kafkaPassword } },
        warehouse: `http://analyst:${SECRETS.clickhousePassword}@clickhouse:8123/analytics`,
      },
      'stores',
    );
    const written = text();
    for (const [name, secret] of Object.entries(SECRETS)) expect(written, name).not.toContain(secret);
    // The rest of each line stays readable.
    expect(written).toContain('postgres://app:[redacted]@db.internal:5432/ats');
    expect(written).toContain('redis://:[redacted]@redis:6379');
    expect(written).toContain('"username":"svc"');
    expect(written).toContain('token exchange failed');
    expect(written.match(/\[redacted\]/g)!.length).toBeGreaterThanOrEqual(12);
  });
});

describe.each(databaseKinds())('the start banner on %s', (kind) => {
  it('prints the demo key and tokens on the start that created them, then only the file', async () => {
    const t = await createTestDatabase(kind);
    const dataDir = await mkdtemp(join(tmpdir(), 'ats-banner-'));
    try {
      const first = await ensureDemo(t.db, dataDir, 'http://127.0.0.1:3000');
      const { apiKey, dashboardToken, agentKey } = first!.credentials;
      const firstBanner = demoBannerLines('http://127.0.0.1:3000', first!).join('\n');
      for (const secret of [apiKey, dashboardToken, agentKey]) expect(firstBanner).toContain(secret);

      const again = await ensureDemo(t.db, dataDir, 'http://127.0.0.1:3000');
      expect(again!.created).toBe(false);
      const laterBanner = demoBannerLines('http://127.0.0.1:3000', again!).join('\n');
      for (const secret of [apiKey, dashboardToken, agentKey]) expect(laterBanner).not.toContain(secret);
      expect(laterBanner).toContain(join(dataDir, 'demo-credentials.json'));
      expect(laterBanner).toContain(first!.credentials.affCode);
    } finally {
      await t.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
