/**
 * Issue 15, point 4: dashboard sessions expire 30 days after their last use (renewed on use, at
 * most hourly), sign-out revokes on the server, and `npm run ops -- revoke-sessions <email>` ends
 * every session and CLI login token of a person. Issue 27, point 5: a suspended person is refused
 * with every session and login token from the next request on.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, sql, type Database } from '../../../core/db.js';
import { migrate } from '../../../core/migrate.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { resolveLoginToken } from '../../../domain/access/cli-login.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { addMember, createSession, createWorkspace, sessionUserId, SESSION_IDLE_LIFETIME_MS } from '../../../domain/access/workspaces.js';
import { buildTestApp, createTestProgram, type TestProgram } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const ROOT = join(import.meta.dirname, '../../..');
const run = promisify(execFile);
const q = {
  expiry: sql('t.session_expiry', `SELECT expires_at FROM dashboard_sessions WHERE token_hash = $1`),
  setExpiry: sql('t.session_set_expiry', `UPDATE dashboard_sessions SET expires_at = now() + make_interval(secs => $2) WHERE token_hash = $1`),
  loginToken: sql('t.session_login_token', `INSERT INTO cli_login_tokens (user_id, token_hash, expires_at) VALUES ($1, $2, now() + interval '1 day')`),
  suspend: sql('t.session_suspend', `UPDATE users SET suspended_at = now() WHERE id = $1`),
  reinstate: sql('t.session_reinstate', `UPDATE users SET suspended_at = NULL WHERE id = $1`),
  program: sql('t.session_program', `SELECT name, updated_at FROM programs WHERE id = $1`),
  programs: sql('t.session_programs', `SELECT count(*)::int AS n FROM programs`),
};

// chDB binds one data directory per process: one warehouse for the file, so performance answers.
let dir: string;
let warehouse: Warehouse;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ats-sessions-'));
  warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  await migrateWarehouse(warehouse);
});
afterAll(async () => {
  await warehouse?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const expiryOf = async (db: Database, token: string) => (await db.one<{ expires_at: Date }>(q.expiry, [hashSecret(token)]))?.expires_at.getTime();
const DAY = 86_400_000;

describe.each(databaseKinds())('dashboard sessions on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db, undefined, undefined, warehouse);
    program = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const newSession = async () => createSession(t.db, await addMember(t.db, program.workspace.workspaceId, `s-${Math.random()}@test.example`, 'member'));
  const programs = (token: string) => app.inject({ method: 'GET', url: '/api/tracking/programs', headers: { authorization: `Bearer ${token}` } });

  it('a new session lives 30 days; one used after an hour is renewed for 30 days from then', async () => {
    const token = await newSession();
    const expires = await expiryOf(t.db, token);
    expect(Math.abs(expires! - (Date.now() + SESSION_IDLE_LIFETIME_MS))).toBeLessThan(60_000);
    // Just renewed: a use does not write.
    await t.db.many(q.setExpiry, [hashSecret(token), 30 * 86_400 - 600]);
    const recent = await expiryOf(t.db, token);
    expect((await programs(token)).statusCode).toBe(200);
    expect(await expiryOf(t.db, token)).toBe(recent);
    // Two hours left: the use pushes it to 30 days from now.
    await t.db.many(q.setExpiry, [hashSecret(token), 7_200]);
    expect((await programs(token)).statusCode).toBe(200);
    expect(Math.abs((await expiryOf(t.db, token))! - (Date.now() + 30 * DAY))).toBeLessThan(60_000);
  });

  it('an expired session is refused everywhere', async () => {
    const token = await newSession();
    await t.db.many(q.setExpiry, [hashSecret(token), -1]);
    expect((await programs(token)).statusCode).toBe(401);
    const perf = await app.inject({ method: 'GET', url: `/api/tracking/status/${program.programId}`, headers: { authorization: `Bearer ${token}` } });
    expect(perf.statusCode).not.toBe(200);
    expect(await sessionUserId(t.db, token)).toBeUndefined();
  });

  it('sign-out revokes the session on the server; the user’s other sessions go on', async () => {
    const userId = await addMember(t.db, program.workspace.workspaceId, `two-${Math.random()}@test.example`, 'member');
    const [laptop, phone] = [await createSession(t.db, userId), await createSession(t.db, userId)];
    const out = await app.inject({ method: 'DELETE', url: '/api/tracking/session', headers: { authorization: `Bearer ${laptop}` } });
    expect(out.statusCode).toBe(200);
    expect(out.json()).toEqual({ data: { signed_out: true } });
    expect((await programs(laptop)).statusCode).toBe(401);
    expect(await expiryOf(t.db, laptop)).toBeUndefined();
    expect((await programs(phone)).statusCode).toBe(200);
    // Signing out again, or with no session: the management 401.
    expect((await app.inject({ method: 'DELETE', url: '/api/tracking/session', headers: { authorization: `Bearer ${laptop}` } })).statusCode).toBe(401);
    expect((await app.inject({ method: 'DELETE', url: '/api/tracking/session' })).statusCode).toBe(401);
  });

  it('a suspended user is refused with every session at once, reads and writes, each surface with its own answer; reinstated, they work again', async () => {
    const userId = await addMember(t.db, program.workspace.workspaceId, `suspended-${kind}@test.example`, 'owner');
    const [laptop, phone] = [await createSession(t.db, userId), await createSession(t.db, userId)];
    await t.db.many(q.loginToken, [userId, hashSecret(`slt_suspended_${kind}`)]);
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    const calls = (token: string) => ({
      performance: () => app.inject({ method: 'GET', url: `/api/tracking/performance/${program.programId}`, headers: as(token) }),
      status: () => app.inject({ method: 'GET', url: `/api/tracking/status/${program.programId}`, headers: as(token) }),
      programs: () => programs(token),
      rename: () => app.inject({ method: 'PATCH', url: `/api/tracking/programs/${program.programId}`, headers: as(token), payload: { name: `Renamed ${Math.random()}` } }),
      create: () =>
        app.inject({
          method: 'POST',
          url: '/api/tracking/programs',
          headers: as(token),
          payload: { name: 'Not while suspended', domain: 'shop.test.example', commission_type: 'percent', commission_rate: 10 },
        }),
    });
    const cli = () => app.inject({ method: 'GET', url: '/api/v1/cli/programs', headers: as(`slt_suspended_${kind}`) });

    for (const token of [laptop, phone]) {
      for (const [name, call] of Object.entries(calls(token))) expect((await call()).statusCode, `${name} before`).toBe(200);
    }
    expect((await cli()).statusCode).toBe(200);

    await t.db.many(q.suspend, [userId]);
    const programBefore = await t.db.one(q.program, [program.programId]);
    const countBefore = await t.db.one(q.programs);
    const sessionRequired = 'A dashboard session is required';
    for (const token of [laptop, phone]) {
      const c = calls(token);
      // Authentication rule 6: performance is 403 without a session; status and management 401.
      const expected: [keyof typeof c, number][] = [['performance', 403], ['status', 401], ['programs', 401], ['rename', 401], ['create', 401]];
      for (const [name, status] of expected) {
        const res = await c[name]();
        expect(res.statusCode, `${name}: ${res.body}`).toBe(status);
        expect(res.json().error, name).toMatchObject({ status, message: sessionRequired });
      }
      expect((await app.inject({ method: 'DELETE', url: '/api/tracking/session', headers: as(token) })).statusCode).toBe(401);
      expect(await sessionUserId(t.db, token)).toBeUndefined();
    }
    const cliRefused = await cli();
    expect([cliRefused.statusCode, cliRefused.json().error.message]).toEqual([401, 'Invalid or expired login token. Run `svc login` to log in again.']);
    // The refused writes wrote nothing.
    expect(await t.db.one(q.program, [program.programId])).toEqual(programBefore);
    expect(await t.db.one(q.programs)).toEqual(countBefore);

    // A suspension is a hold, not a sign-out: reinstated, the same sessions and token work again.
    await t.db.many(q.reinstate, [userId]);
    for (const token of [laptop, phone]) {
      expect((await calls(token).performance()).statusCode).toBe(200);
      expect((await programs(token)).statusCode).toBe(200);
      expect(await sessionUserId(t.db, token)).toBe(userId);
    }
    expect((await cli()).statusCode).toBe(200);
  });
});

describe.each(databaseKinds())('npm run ops -- revoke-sessions on %s', (kind) => {
  let dir: string | undefined;
  let t: TestDatabase | undefined;
  afterAll(async () => {
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("ends every dashboard session and CLI login token of the email, and nobody else's", { timeout: 120_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-ops-sessions-'));
    const env: Record<string, string> = { PATH: process.env.PATH!, HOME: process.env.HOME ?? dir, DATA_DIR: dir, LOG_LEVEL: 'silent' };
    let open: () => Promise<Database>;
    if (kind === 'postgres') {
      t = await createTestDatabase('postgres');
      env.DATABASE_URL = t.url!;
      open = () => openDatabase({ kind: 'postgres', url: t!.url!, poolSize: 2 });
    } else {
      open = () => openDatabase({ kind: 'pglite', dataDir: join(dir!, 'pg') });
    }
    let db = await open();
    await migrate(db);
    const workspaceId = await createWorkspace(db, 'Ops');
    const leaver = await addMember(db, workspaceId, 'Leaver@Ops.example', 'member');
    const stayer = await addMember(db, workspaceId, 'stayer@ops.example', 'member');
    const leaverSessions = [await createSession(db, leaver), await createSession(db, leaver)];
    const stayerSession = await createSession(db, stayer);
    await db.many(q.loginToken, [leaver, hashSecret('slt_leaver')]);
    await db.many(q.loginToken, [stayer, hashSecret('slt_stayer')]);
    await db.close();

    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/ops.ts', 'revoke-sessions', 'leaver@ops.example'], { cwd: ROOT, env });
    expect(stdout).toContain('2 dashboard session(s) and 1 CLI login token(s) revoked');
    await expect(run(process.execPath, ['--import', 'tsx', 'scripts/ops.ts', 'revoke-sessions', 'nobody@ops.example'], { cwd: ROOT, env })).rejects.toThrow(
      /no user has the email/,
    );

    db = await open();
    try {
      for (const token of leaverSessions) expect(await sessionUserId(db, token)).toBeUndefined();
      expect(await sessionUserId(db, stayerSession)).toBe(stayer);
      expect((await resolveLoginToken(db, 'slt_leaver')).outcome).toBe('invalid');
      expect(await resolveLoginToken(db, 'slt_stayer')).toEqual({ outcome: 'valid', userId: stayer });
    } finally {
      await db.close();
    }
  });
});

describe.each(databaseKinds())('npm run ops -- suspend-user and reinstate-user on %s', (kind) => {
  let dir: string | undefined;
  let t: TestDatabase | undefined;
  afterAll(async () => {
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("suspend-user refuses the person's sessions and login tokens from the next lookup on, nobody else's; reinstate-user restores them", { timeout: 120_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-ops-suspend-'));
    const env: Record<string, string> = { PATH: process.env.PATH!, HOME: process.env.HOME ?? dir, DATA_DIR: dir, LOG_LEVEL: 'silent' };
    let open: () => Promise<Database>;
    if (kind === 'postgres') {
      t = await createTestDatabase('postgres');
      env.DATABASE_URL = t.url!;
      open = () => openDatabase({ kind: 'postgres', url: t!.url!, poolSize: 2 });
    } else {
      open = () => openDatabase({ kind: 'pglite', dataDir: join(dir!, 'pg') });
    }
    const ops = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'scripts/ops.ts', ...args], { cwd: ROOT, env });
    let db = await open();
    await migrate(db);
    const workspaceId = await createWorkspace(db, 'Ops');
    const held = await addMember(db, workspaceId, 'Held@Ops.example', 'member');
    const other = await addMember(db, workspaceId, 'other@ops.example', 'member');
    const heldSession = await createSession(db, held);
    const otherSession = await createSession(db, other);
    await db.many(q.loginToken, [held, hashSecret('slt_held')]);
    await db.close();

    expect((await ops('suspend-user', 'held@ops.example')).stdout).toContain('held@ops.example: suspended');
    await expect(ops('suspend-user', 'nobody@ops.example')).rejects.toThrow(/no user has the email/);
    db = await open();
    try {
      expect(await sessionUserId(db, heldSession)).toBeUndefined();
      expect((await resolveLoginToken(db, 'slt_held')).outcome).toBe('invalid');
      expect(await sessionUserId(db, otherSession)).toBe(other);
    } finally {
      await db.close();
    }

    expect((await ops('reinstate-user', 'held@ops.example')).stdout).toContain('held@ops.example: reinstated');
    await expect(ops('reinstate-user', 'nobody@ops.example')).rejects.toThrow(/no user has the email/);
    db = await open();
    try {
      expect(await sessionUserId(db, heldSession)).toBe(held);
      expect(await resolveLoginToken(db, 'slt_held')).toEqual({ outcome: 'valid', userId: held });
    } finally {
      await db.close();
    }
  });
});
