/**
 * Issue 31, points 3, 4 and 6: a partner's several links and its promo codes through the brand's
 * routes, on PGlite and Postgres: created, listed, turned off and on, audited; unknown and
 * other-program ids 404, bad and colliding codes refused with nothing written.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { M } from '../../../ingest/http/messages.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const q = {
  counts: sql(
    't.links_counts',
    `SELECT (SELECT count(*)::int FROM referral_links) AS links, (SELECT count(*)::int FROM promo_codes) AS codes,
            (SELECT count(*)::int FROM audit_log) AS audit, (SELECT count(*)::int FROM clicks) AS clicks`,
  ),
  audit: sql('t.links_audit', `SELECT action, target_type, target_id, before, after FROM audit_log WHERE program_id = $1 ORDER BY id DESC LIMIT 1`),
};

describe.each(databaseKinds())("a partner's links and promo codes on %s", (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let p: TestProgram;
  let other: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    p = await createTestProgram(app, t.db, { domain: 'links.test.example' });
    other = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: object) =>
    app.inject({ method, url: `/api/tracking${url}`, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const counts = async () => (await t.db.one<Record<string, number>>(q.counts))!;
  const lastAudit = async (programId: number) => t.db.one<{ action: string; target_type: string; target_id: string; before: unknown; after: unknown }>(q.audit, [programId]);
  const click = (affCode: string) =>
    app.inject({ method: 'POST', url: '/api/v1/track/click', headers: { 'x-forwarded-for': freshIp() }, payload: { affiliate_url: `https://links.test.example/?aff=${affCode}` } });

  it('creates several links per partner (its own code or a generated one), lists them, turns one off and on, each write audited', async () => {
    const links = `/programs/${p.programId}/partners/${p.partnerId}/links`;
    const own = await call('POST', links, p.workspace.memberToken, { aff_code: 'spring-sale' });
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json().data).toEqual({ id: expect.any(Number), aff_code: 'spring-sale', enabled: true, referral_url: 'https://links.test.example/?aff=spring-sale', created_at: expect.any(String) });
    const generated = await call('POST', links, p.workspace.ownerToken, {});
    expect(generated.statusCode).toBe(200);
    expect(generated.json().data.aff_code).toMatch(/^[A-Za-z0-9]{8}$/);

    const list = await call('GET', links, p.workspace.memberToken);
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((l: { aff_code: string }) => l.aff_code)).toEqual([p.affCode, 'spring-sale', generated.json().data.aff_code]);

    const id = own.json().data.id as number;
    const off = await call('PATCH', `${links}/${id}`, p.workspace.memberToken, { enabled: false });
    expect(off.statusCode).toBe(200);
    expect(off.json().data).toMatchObject({ id, aff_code: 'spring-sale', enabled: false });
    expect(await lastAudit(p.programId)).toMatchObject({ action: 'link.disabled', target_type: 'link', target_id: 'spring-sale', before: { enabled: true }, after: { enabled: false } });
    const gone = await click('spring-sale');
    expect(gone.statusCode).toBe(410);
    expect(gone.json().error.code).toBe('link_disabled');
    // Setting the state it has writes nothing.
    const before = await counts();
    expect((await call('PATCH', `${links}/${id}`, p.workspace.memberToken, { enabled: false })).statusCode).toBe(200);
    expect(await counts()).toEqual(before);
    expect((await call('PATCH', `${links}/${id}`, p.workspace.memberToken, { enabled: true })).json().data.enabled).toBe(true);
    expect((await click('spring-sale')).statusCode).toBe(200);
  });

  it('refuses a taken code, unknown and other-program ids, and bad input, writing nothing', async () => {
    const links = `/programs/${p.programId}/partners/${p.partnerId}/links`;
    const before = await counts();
    const taken = await call('POST', links, p.workspace.ownerToken, { aff_code: other.affCode });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error.message).toBe(M.management.affCodeTaken);
    const otherLink = (await call('GET', `/programs/${other.programId}/partners/${other.partnerId}/links`, other.workspace.ownerToken)).json().data[0].id;
    for (const [method, url, payload] of [
      ['GET', `/programs/${p.programId}/partners/${other.partnerId}/links`, undefined],
      ['POST', `/programs/${p.programId}/partners/${other.partnerId}/links`, {}],
      ['PATCH', `${links}/${otherLink}`, { enabled: false }],
      ['PATCH', `${links}/999999999`, { enabled: false }],
      ['PATCH', `/programs/${p.programId}/partners/${other.partnerId}/links/${otherLink}`, { enabled: false }],
    ] as const) {
      const res = await call(method, url, p.workspace.ownerToken, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().data).toBeNull();
    }
    // Another workspace's program: not theirs to see.
    expect((await call('GET', `/programs/${other.programId}/partners/${other.partnerId}/links`, p.workspace.ownerToken)).statusCode).toBeGreaterThanOrEqual(403);
    for (const [url, payload, message] of [
      [links, { aff_code: 'a b' }, M.management.affCode],
      [links, { aff_code: 'x'.repeat(65) }, M.management.affCode],
      [`${links}/0`, { enabled: false }, M.links.linkId],
      [`${links}/abc`, { enabled: false }, M.links.linkId],
      [`${links}/1`, { enabled: 'no' }, M.management.enabled],
    ] as const) {
      const res = await call(url === links ? 'POST' : 'PATCH', url, p.workspace.ownerToken, payload);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error.message).toBe(message);
    }
    expect(await counts()).toEqual(before);
  });

  it('promo codes: unique per program ignoring case (409, nothing written), a promotion id unique too, listed, disabled, audited', async () => {
    const codes = `/programs/${p.programId}/partners/${p.partnerId}/promo-codes`;
    const created = await call('POST', codes, p.workspace.memberToken, { code: 'Summer25', processor_promotion_id: 'promo_1SummerXYZ' });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json().data).toEqual({
      id: expect.any(Number), partner_id: p.partnerId, code: 'Summer25', processor_promotion_id: 'promo_1SummerXYZ', enabled: true, created_at: expect.any(String),
    });
    expect(await lastAudit(p.programId)).toMatchObject({ action: 'promo_code.created', target_type: 'promo_code', before: null, after: { code: 'Summer25' } });

    // A second partner of the program; and the other program may use the same code.
    const second = await call('POST', `/programs/${p.programId}/partners`, p.workspace.ownerToken, { name: 'Second' });
    const secondId = second.json().data.partner_id as number;
    const before = await counts();
    for (const [partnerId, payload, message] of [
      [p.partnerId, { code: 'summer25' }, M.links.codeTaken('summer25')],
      [secondId, { code: 'SUMMER25' }, M.links.codeTaken('SUMMER25')],
      [secondId, { code: 'Autumn', processor_promotion_id: 'promo_1SummerXYZ' }, M.links.promotionIdTaken('promo_1SummerXYZ')],
    ] as const) {
      const res = await call('POST', `/programs/${p.programId}/partners/${partnerId}/promo-codes`, p.workspace.ownerToken, payload);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ data: null, error: { status: 409, name: 'ConflictError', message } });
    }
    expect(await counts()).toEqual(before);
    expect((await call('POST', `/programs/${other.programId}/partners/${other.partnerId}/promo-codes`, other.workspace.ownerToken, { code: 'summer25' })).statusCode).toBe(200);

    const list = await call('GET', codes, p.workspace.memberToken);
    expect(list.json().data.map((c: { code: string }) => c.code)).toEqual(['Summer25']);
    const id = created.json().data.id as number;
    const disabled = await call('DELETE', `${codes}/${id}`, p.workspace.memberToken);
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json().data.enabled).toBe(false);
    expect(await lastAudit(p.programId)).toMatchObject({ action: 'promo_code.disabled', before: { enabled: true }, after: { enabled: false } });
    // A disabled code keeps its name in the program.
    expect((await call('POST', `/programs/${p.programId}/partners/${secondId}/promo-codes`, p.workspace.ownerToken, { code: 'summer25' })).statusCode).toBe(409);
    const enabled = await call('PATCH', `${codes}/${id}`, p.workspace.memberToken, { enabled: true });
    expect(enabled.json().data.enabled).toBe(true);
  });

  it('promo codes refuse bad input and unknown or other-program ids, writing nothing', async () => {
    const codes = `/programs/${p.programId}/partners/${p.partnerId}/promo-codes`;
    const otherCode = (await call('POST', `/programs/${other.programId}/partners/${other.partnerId}/promo-codes`, other.workspace.ownerToken, { code: 'OTHER-ONLY' })).json().data.id;
    const before = await counts();
    for (const [payload, message] of [
      [{}, M.links.code],
      [{ code: 'x' }, M.links.code],
      [{ code: 'x'.repeat(65) }, M.links.code],
      [{ code: 'has space' }, M.links.code],
      [{ code: 'ok-code', processor_promotion_id: '' }, M.links.promotionId],
      [{ code: 'ok-code', processor_promotion_id: 'p'.repeat(256) }, M.links.promotionId],
      [{ code: 'ok-code', extra: 1 }, M.body.unknownField(['extra'])],
    ] as const) {
      const res = await call('POST', codes, p.workspace.ownerToken, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error.message).toBe(message);
    }
    for (const [method, url] of [
      ['POST', `/programs/${p.programId}/partners/${other.partnerId}/promo-codes`],
      ['GET', `/programs/${p.programId}/partners/${other.partnerId}/promo-codes`],
      ['DELETE', `${codes}/${otherCode}`],
      ['PATCH', `${codes}/999999999`],
    ] as const) {
      const res = await call(method, url, p.workspace.ownerToken, method === 'POST' ? { code: 'nope-code' } : method === 'PATCH' ? { enabled: false } : undefined);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect(await counts()).toEqual(before);
  });
});
