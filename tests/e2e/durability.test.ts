/**
 * Nothing acknowledged is lost: the service is killed (SIGKILL) right after answering 200 to a
 * burst of clicks and sales, then every acknowledged one is looked for in the database. On the
 * embedded start PGlite also syncs each commit to disk (Postgres's fsync), so the same holds for
 * a power loss, which a test cannot cause; that it is on is checked directly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { openDatabase, sql, type Database } from '../../core/db.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';

const ROOT = join(import.meta.dirname, '../..');
const setting = (name: string) => sql(`test.show_${name}`, `SELECT current_setting('${name}') AS value`);

async function show(db: Database, name: string) {
  return (await db.one<{ value: string }>(setting(name)))!.value;
}

describe('embedded Postgres (PGlite) durability setting', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  const freshDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ats-durable-'));
    dirs.push(dir);
    return join(dir, 'pg');
  };

  it('syncs commits to disk by default, and not with EMBEDDED_FSYNC=off', { timeout: 180_000 }, async () => {
    const durable = await openDatabase({ kind: 'pglite', dataDir: await freshDir() });
    try {
      expect(await show(durable, 'fsync')).toBe('on');
      expect(await show(durable, 'wal_sync_method')).toBe('fsync');
      expect(await show(durable, 'shared_buffers')).toBe('32MB');
    } finally {
      await durable.close();
    }
    const fast = await openDatabase({ kind: 'pglite', dataDir: await freshDir(), durable: false, sharedBuffers: '64MB' });
    try {
      expect(await show(fast, 'fsync')).toBe('off');
      expect(await show(fast, 'shared_buffers')).toBe('64MB');
    } finally {
      await fast.close();
    }
  });

  it('keeps a small buffer cache unless EMBEDDED_SHARED_BUFFERS says otherwise', () => {
    expect(loadConfig({}).database).toMatchObject({ kind: 'pglite', sharedBuffers: '32MB' });
    expect(loadConfig({ EMBEDDED_SHARED_BUFFERS: '128MB' }).database).toMatchObject({ sharedBuffers: '128MB' });
    expect(() => loadConfig({ EMBEDDED_SHARED_BUFFERS: '128' })).toThrow(/EMBEDDED_SHARED_BUFFERS must be a size such as 32MB/);
  });
});

function startService(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', PIPELINE: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${output}`)), 120_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve({ child, url });
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.on('exit', (code) => reject(new Error(`service exited (${code}):\n${output}`)));
  });
}

describe.each(databaseKinds())('acknowledged writes survive SIGKILL on %s', (kind) => {
  let t: TestDatabase | undefined;
  let dir: string | undefined;
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every click and sale answered 200 is in the database after a restart', { timeout: 240_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-kill-'));
    const env: Record<string, string> = { DATA_DIR: dir, SEED_DEMO: 'true' };
    if (kind === 'postgres') {
      t = await createTestDatabase('postgres');
      env.DATABASE_URL = t.url!;
      env.OIDC_EMBEDDED_PORT = '0';
      // The distributed ingest refuses to start without it (issue 27).
      env.SECRETS_KEY = randomBytes(32).toString('base64');
    }
    const started = await startService(env);
    child = started.child;
    let apiKey: string;
    let affCode: string;
    if (kind === 'pglite') {
      ({ apiKey, affCode } = JSON.parse(await readFile(join(dir, 'demo-credentials.json'), 'utf8')) as { apiKey: string; affCode: string });
    } else {
      // No demo beside a real database: a program made through the API, with a session from SQL.
      ({ apiKey, affCode } = await programOnPostgres(started.url, t!.url!));
    }
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${started.url}/api/v1/track/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const auth = { authorization: `Bearer ${apiKey}` };
    const clicks = Array.from({ length: 40 }, (_, i) =>
      post('click', { affiliate_url: `https://shop.demo.example/?aff=${affCode}` }, { 'x-forwarded-for': `192.0.2.${i}` }),
    );
    const sales = Array.from({ length: 40 }, (_, i) => post('sale', { transaction_id: `kill-${i}`, additional_data: { test_mode: true } }, auth));
    const answers = await Promise.all([...clicks, ...sales]);
    // Killed at once: no graceful shutdown, no checkpoint.
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    const clickIds: string[] = [];
    const saleIds: string[] = [];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { click_id?: string; data?: { sale_id: string } };
      if (body.click_id) clickIds.push(body.click_id);
      else saleIds.push(body.data!.sale_id);
    }
    expect(clickIds).toHaveLength(40);
    expect(saleIds).toHaveLength(40);
    const db = kind === 'pglite' ? await openDatabase({ kind: 'pglite', dataDir: join(dir, 'pg') }) : await openDatabase({ kind: 'postgres', url: t!.url!, poolSize: 2 });
    try {
      const foundClicks = await db.many<{ id: string }>(sql('test.kill_clicks', `SELECT click_id::text AS id FROM clicks WHERE click_id::text = ANY($1)`), [clickIds]);
      const foundSales = await db.many<{ id: string }>(sql('test.kill_sales', `SELECT id::text AS id FROM sale_events WHERE id::text = ANY($1)`), [saleIds]);
      expect(foundClicks).toHaveLength(40);
      expect(foundSales).toHaveLength(40);
    } finally {
      await db.close();
    }
  });
});

async function programOnPostgres(url: string, databaseUrl: string): Promise<{ apiKey: string; affCode: string }> {
  const db = await openDatabase({ kind: 'postgres', url: databaseUrl, poolSize: 1 });
  const { addMember, createSession, createWorkspace } = await import('../../domain/access/workspaces.js');
  let token: string;
  try {
    const workspaceId = await createWorkspace(db, 'Kill test');
    token = await createSession(db, await addMember(db, workspaceId, 'owner@kill.example', 'owner'));
  } finally {
    await db.close();
  }
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const program = (await (
    await fetch(`${url}/api/tracking/programs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Kill', domain: 'shop.demo.example', commission_type: 'percent', commission_rate: 10 }),
    })
  ).json()) as { data: { id: number } };
  const key = (await (await fetch(`${url}/api/tracking/programs/${program.data.id}/api-key`, { method: 'POST', headers })).json()) as { data: { api_key: string } };
  const partner = (await (
    await fetch(`${url}/api/tracking/programs/${program.data.id}/partners`, { method: 'POST', headers, body: JSON.stringify({ name: 'P' }) })
  ).json()) as { data: { aff_code: string } };
  return { apiKey: key.data.api_key, affCode: partner.data.aff_code };
}
