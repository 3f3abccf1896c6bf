import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { markKeyForRotation } from '../../../domain/programs/api-keys.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { ReadinessResponse, SaleResponse } from '../../../ingest/tracking/schemas.js';
import { DOCS_BASE_URL, buildTestApp, createTestProgram, freshIp } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

describe.each(databaseKinds())('program keys, rotation and readiness on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const readiness = (key: string | undefined, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'GET',
      url: '/api/v1/programs/me/readiness',
      headers: { 'x-forwarded-for': freshIp(), ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}), ...headers },
    });
  const testSale = (key: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/track/sale',
      headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': freshIp() },
      payload: { additional_data: { test_mode: true } },
    });

  it('keys are stored only as hashes; reads show the masked form', async () => {
    const p = await createTestProgram(app, t.db);
    expect(p.apiKey).toMatch(/^aff_[A-Za-z0-9_-]{32}$/);
    const rows = await t.db.many<{ key_hash: string; key_masked: string }>(
      sql('t.key_rows', 'SELECT key_hash, key_masked FROM program_api_keys WHERE program_id = $1'),
      [p.programId],
    );
    expect(rows).toEqual([{ key_hash: hashSecret(p.apiKey), key_masked: `aff_********${p.apiKey.slice(-4)}` }]);
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/tracking/programs/${p.programId}`,
      headers: { authorization: `Bearer ${p.workspace.ownerToken}` },
      payload: { name: 'Renamed' },
    });
    expect(patched.json().data).toMatchObject({ name: 'Renamed', api_token_masked: rows[0]!.key_masked });
    expect(patched.body).not.toContain(p.apiKey);
  });

  it('regenerating replaces the key at once: the old key is 401, the new one works; members are refused', async () => {
    const p = await createTestProgram(app, t.db);
    const url = `/api/tracking/programs/${p.programId}/api-key`;
    const asMember = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${p.workspace.memberToken}` } });
    expect(asMember.statusCode).toBe(403);
    const regenerated = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${p.workspace.ownerToken}` } });
    expect(regenerated.statusCode).toBe(200);
    const newKey = regenerated.json().data.api_key as string;
    expect(newKey).not.toBe(p.apiKey);
    expect((await testSale(p.apiKey)).statusCode).toBe(401);
    expect((await testSale(newKey)).statusCode).toBe(200);
  });

  it('an older key without the aff_ prefix still matches exactly', async () => {
    const p = await createTestProgram(app, t.db);
    const legacy = 'legacyKey0123456789abcdef';
    await t.db.many(sql('t.legacy_key', `UPDATE program_api_keys SET key_hash = $2, key_masked = 'lega********cdef' WHERE program_id = $1`), [
      p.programId,
      hashSecret(legacy),
    ]);
    expect((await testSale(legacy)).statusCode).toBe(200);
    expect((await testSale(`${legacy}x`)).statusCode).toBe(401);
    expect((await testSale(legacy.toUpperCase())).statusCode).toBe(401);
  });

  it('a key marked for rotation works with Deprecation, Sunset, Link and a top-level warnings array', async () => {
    const p = await createTestProgram(app, t.db);
    const deadline = new Date(Date.now() + 7 * 86_400_000);
    const mark = await markKeyForRotation(t.db, p.programId, deadline);
    const res = await testSale(p.apiKey);
    expect(res.statusCode).toBe(200);
    expect(res.headers.deprecation).toBe(`@${Math.floor(mark!.markedAt.getTime() / 1000)}`);
    expect(res.headers.sunset).toBe(deadline.toUTCString());
    expect(res.headers.link).toBe(`<${DOCS_BASE_URL}/errors#api_key_rotation_required>; rel="deprecation"`);
    const body = res.json();
    expect(body.data.test_mode).toBe(true);
    expect(body.warnings).toEqual([
      {
        code: 'api_key_rotation_required',
        message: expect.any(String),
        hint: expect.any(String),
        rotate_by: deadline.toISOString(),
        docs_url: `${DOCS_BASE_URL}/errors#api_key_rotation_required`,
      },
    ]);
    // The contract describes the warnings too (clients' types come from it): parsing keeps every field.
    expect(SaleResponse.parse(body)).toEqual(body);
    const ready = await readiness(p.apiKey);
    expect(ready.json().data.api_key).toEqual({ state: 'marked_for_rotation', rotate_by: deadline.toISOString() });
    expect(ready.json().warnings).toHaveLength(1);
    expect(ReadinessResponse.parse(ready.json())).toEqual(ready.json());
  });

  it('after the deadline every call is 401 api_key_rotation_required with the headers and no warnings; regenerating clears it', async () => {
    const p = await createTestProgram(app, t.db);
    await markKeyForRotation(t.db, p.programId, new Date(Date.now() - 1000));
    for (const res of [await testSale(p.apiKey), await readiness(p.apiKey)]) {
      expect(res.statusCode).toBe(401);
      const body = res.json();
      expect(body).toEqual({
        error: { code: 'api_key_rotation_required', message: expect.any(String), hint: expect.any(String), docs_url: `${DOCS_BASE_URL}/errors#api_key_rotation_required` },
      });
      expect(res.headers.deprecation).toMatch(/^@\d+$/);
      expect(res.headers.sunset).toBeTruthy();
      expect(res.headers.link).toContain('rel="deprecation"');
    }
    const regenerated = await app.inject({
      method: 'POST',
      url: `/api/tracking/programs/${p.programId}/api-key`,
      headers: { authorization: `Bearer ${p.workspace.ownerToken}` },
    });
    const fresh = await testSale(regenerated.json().data.api_key);
    expect(fresh.statusCode).toBe(200);
    expect(fresh.headers.deprecation).toBeUndefined();
    expect(fresh.json().warnings).toBeUndefined();
  });

  it('readiness: typed invalid_key errors with the spec messages', async () => {
    const cases: [Record<string, string>, string][] = [
      [{}, 'Missing or malformed Authorization header. Expected: Bearer <api_token>.'],
      [{ authorization: 'Bearer ' }, 'Missing API token.'],
      [{ authorization: 'Bearer aff_nope' }, 'Invalid API token.'],
    ];
    for (const [headers, message] of cases) {
      const res = await readiness(undefined, headers);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: { code: 'invalid_key', message } });
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });

  it('readiness reports what is missing before going live, then ready', async () => {
    const p = await createTestProgram(app, t.db, { paymentTrackingMode: 's2s' });
    const first = (await readiness(p.apiKey)).json().data;
    expect(first).toMatchObject({
      program_id: p.programId,
      ready: false,
      api_key: { state: 'active', rotate_by: null },
      payment_tracking_mode: 's2s',
      partners: { approved: 1 },
      referral_links: { enabled: 1 },
      test_events: { click: 0, lead: 0, sale: 0 },
    });
    const click = await app.inject({
      method: 'POST',
      url: '/api/v1/track/click',
      headers: { 'x-forwarded-for': freshIp() },
      payload: { affiliate_url: `https://x.example/?aff=${p.affCode}`, additional_data: { test_mode: true } },
    });
    await app.inject({
      method: 'POST',
      url: '/api/v1/track/lead',
      headers: { authorization: `Bearer ${p.apiKey}`, 'x-forwarded-for': freshIp() },
      payload: { click_id: click.json().click_id, customer_key: 'ready-check', additional_data: { test_mode: true } },
    });
    await testSale(p.apiKey);
    const after = (await readiness(p.apiKey)).json().data;
    expect(after.test_events).toEqual({ click: 1, lead: 1, sale: 1 });
    expect(after.ready).toBe(true);
    expect(after.checks.every((c: { ok: boolean }) => c.ok)).toBe(true);
  });

  it('readiness answers 500 in the typed envelope with retry_after_seconds when the database fails', async () => {
    const broken = await createTestDatabase(kind);
    const p = await createTestProgram(app, t.db);
    const brokenApp = await buildTestApp(broken.db);
    try {
      // The same key, against a database where the facts query cannot run.
      await broken.db.many(sql('t.copy_key', `INSERT INTO workspaces (id, name) VALUES ($1, 'w')`), [p.workspace.workspaceId]);
      await broken.db.many(
        sql('t.copy_program', `INSERT INTO programs (id, workspace_id, name, domain, commission_type, commission_rate) VALUES ($1, $2, 'p', 'd', 'percent', 1)`),
        [p.programId, p.workspace.workspaceId],
      );
      await broken.db.many(sql('t.copy_hash', `INSERT INTO program_api_keys (program_id, key_hash, key_masked) VALUES ($1, $2, 'm')`), [
        p.programId,
        hashSecret(p.apiKey),
      ]);
      await broken.db.many(sql('t.break_logs', `DROP TABLE tracking_logs`));
      const res = await brokenApp.inject({ method: 'GET', url: '/api/v1/programs/me/readiness', headers: { authorization: `Bearer ${p.apiKey}` } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ error: { code: 'internal_error', message: 'Failed to compute readiness. Retry shortly.', retry_after_seconds: 10 } });
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.body).not.toContain('tracking_logs');
    } finally {
      await brokenApp.close();
      await broken.drop();
    }
  });
});
