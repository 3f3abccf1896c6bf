import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createSession, createWorkspace } from '../../../domain/access/workspaces.js';
import { DASHBOARD_CSP } from '../../../ingest/dashboard/page.js';
import { buildTestApp, createTestProgram, createTestWorkspace } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

describe('dashboard page assets', () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let html: string;
  let version: string;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    html = (await app.inject({ url: '/dashboard' })).body;
    version = /\/dashboard\/assets\/([A-Za-z0-9_-]+)\/dashboard\.js/.exec(html)![1]!;
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('serves the page as HTML that is revalidated on every load, under a strict CSP', async () => {
    const res = await app.inject({ url: '/dashboard' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("script-src 'self'");
    expect(DASHBOARD_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect((await app.inject({ url: '/dashboard/' })).headers.location).toBe('/dashboard');
  });

  it('has no inline script, style or event handler (the CSP would refuse them)', () => {
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, content] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/dashboard\/assets\//);
      expect(content!.trim()).toBe('');
    }
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toContain('{{version}}');
  });

  it('serves every asset the page names, with its content type, cached for a year under the current version', async () => {
    const referenced = [...html.matchAll(/\/dashboard\/assets\/[^"]+/g)].map((m) => m[0]);
    const types: Record<string, string> = {
      js: 'text/javascript; charset=utf-8',
      css: 'text/css; charset=utf-8',
      svg: 'image/svg+xml',
    };
    expect(new Set(referenced.map((url) => url.split('.').pop()))).toEqual(new Set(Object.keys(types)));
    for (const url of referenced) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toBe(types[url.split('.').pop()!]);
      expect(res.headers['cache-control'], url).toBe('public, max-age=31536000, immutable');
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
    }
  });

  it('preloads exactly the modules the page script imports, each served beside it', async () => {
    const preloaded = [...html.matchAll(/<link rel="modulepreload" href="\/dashboard\/assets\/[^/]+\/([^"]+)">/g)].map((m) => m[1]!);
    const imported = new Set<string>();
    const pending = ['dashboard.js'];
    while (pending.length) {
      const res = await app.inject({ url: `/dashboard/assets/${version}/${pending.pop()}` });
      expect(res.statusCode).toBe(200);
      for (const [, file] of res.body.matchAll(/^import [^;]+ from '\.\/([a-z-]+\.js)';$/gm)) {
        if (!imported.has(file!)) pending.push(file!);
        imported.add(file!);
      }
    }
    expect(imported.size).toBeGreaterThan(1);
    expect(new Set(preloaded)).toEqual(imported);
    expect(preloaded).toHaveLength(imported.size);
  });

  it('an asset asked for under another version is today’s file, revalidated; an unknown file is 404', async () => {
    const old = await app.inject({ url: '/dashboard/assets/0ld/dashboard.js' });
    expect(old.statusCode).toBe(200);
    expect(old.headers['cache-control']).toBe('no-cache');
    expect(old.body).toBe((await app.inject({ url: `/dashboard/assets/${version}/dashboard.js` })).body);
    for (const file of ['nope.js', 'dashboard.html', '..%2Fapp.ts']) {
      expect((await app.inject({ url: `/dashboard/assets/${version}/${file}` })).statusCode, file).toBe(404);
    }
  });

  it('compresses with brotli or gzip as the browser accepts, same bytes, and answers 304 to its ETag', async () => {
    const url = `/dashboard/assets/${version}/dashboard.js`;
    const plain = await app.inject({ url });
    expect(plain.headers['content-encoding']).toBeUndefined();
    const br = await app.inject({ url, headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('Accept-Encoding');
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(plain.body);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 2);
    const gz = await app.inject({ url, headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(plain.body);

    const again = await app.inject({ url, headers: { 'accept-encoding': 'br', 'if-none-match': br.headers.etag as string } });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    // A tag of another encoding is not a match: the bytes differ.
    expect((await app.inject({ url, headers: { 'if-none-match': br.headers.etag as string } })).statusCode).toBe(200);
  });
});

describe.each(databaseKinds())('GET /api/tracking/programs on %s', (kind) => {
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

  const list = (token?: string) =>
    app.inject({ url: '/api/tracking/programs', headers: token ? { authorization: `Bearer ${token}` } : {} });

  it("lists the programs of the session's workspace, to owners and members, and no one else's", async () => {
    const first = await createTestProgram(app, t.db, { name: 'Shoes', domain: 'shoes.example' });
    const second = await createTestProgram(app, t.db, { name: 'Outlet', domain: 'outlet.example' }, first.workspace);
    await createTestProgram(app, t.db, { name: 'Someone else', domain: 'else.example' });
    const expected = [
      { id: first.programId, workspace_id: first.workspace.workspaceId, name: 'Shoes', domain: 'shoes.example' },
      { id: second.programId, workspace_id: first.workspace.workspaceId, name: 'Outlet', domain: 'outlet.example' },
    ];
    for (const token of [first.workspace.ownerToken, first.workspace.memberToken]) {
      const res = await list(token);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ data: expected });
    }
    expect((await list(`  ${first.workspace.ownerToken}`)).json()).toEqual({ data: expected });
  });

  it('a user of two workspaces sees both; a workspace without programs lists none', async () => {
    const a = await createTestProgram(app, t.db, { name: 'A', domain: 'a.example' });
    const b = await createTestProgram(app, t.db, { name: 'B', domain: 'b.example' });
    const email = `both-${Date.now()}@test.example`;
    const userId = await addMember(t.db, a.workspace.workspaceId, email, 'member');
    await addMember(t.db, b.workspace.workspaceId, email, 'owner');
    const res = await list(await createSession(t.db, userId));
    expect(res.json().data.map((p: { id: number }) => p.id)).toEqual([a.programId, b.programId]);

    const empty = await createTestWorkspace(t.db);
    expect((await list(empty.ownerToken)).json()).toEqual({ data: [] });
    const lonely = await addMember(t.db, await createWorkspace(t.db, 'Empty'), `lonely-${Date.now()}@test.example`, 'owner');
    expect((await list(await createSession(t.db, lonely))).json()).toEqual({ data: [] });
  });

  it('needs a dashboard session: none, an unknown token, an expired one and a program key are 401', async () => {
    const p = await createTestProgram(app, t.db);
    const ownerId = await addMember(t.db, p.workspace.workspaceId, `expired-${Date.now()}@test.example`, 'owner');
    const expired = await createSession(t.db, ownerId, new Date(Date.now() - 1000));
    for (const token of [undefined, 'dsh_unknown', expired, p.apiKey]) {
      const res = await list(token);
      expect(res.statusCode, String(token)).toBe(401);
      expect(res.json()).toEqual({
        data: null,
        error: { status: 401, name: 'UnauthorizedError', message: 'A dashboard session is required', details: {} },
      });
    }
  });
});
