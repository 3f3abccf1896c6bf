import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { inviteMember } from '../../../domain/access/team.js';
import { addMember, createWorkspace, suspendUser } from '../../../domain/access/workspaces.js';
import { M } from '../../../ingest/http/messages.js';
import { providerTrip, signInThroughProvider, startConsoleService, type ConsoleService } from '../../support/console-service.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const counts = sql(
  't.console_sign_in_counts',
  `SELECT (SELECT count(*)::int FROM dashboard_sessions) AS sessions, (SELECT count(*)::int FROM users) AS users,
          (SELECT count(*)::int FROM members) AS members`,
);

describe.each(databaseKinds())('console sign-in through the OpenID provider (%s)', (kind) => {
  let t: TestDatabase;
  let service: ConsoleService;
  let workspaceId: number;
  const tag = Date.now().toString(36);
  const owner = `owner-${tag}@brand.example`;
  const member = `Member-${tag}@Brand.example`;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    service = await startConsoleService(t.db);
    workspaceId = await createWorkspace(t.db, 'Brand');
    await addMember(t.db, workspaceId, owner, 'owner', 'Olga Owner');
    await addMember(t.db, workspaceId, member, 'member');
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    await t?.drop();
  });

  /** The platform envelope or a success body, as the tests read it. */
  type Answer = { data: Record<string, unknown> & { workspaces?: unknown }; error: { message: string } };
  const json = async (res: Response) => (await res.json()) as Answer;
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const get = (path: string, token: string) => fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

  it('any member signs in with their own identity: a 30-day session, stored as a hash, never in a URL', async () => {
    for (const email of [owner, member]) {
      const { status, body, trip } = await signInThroughProvider(service.url, email);
      expect(status, JSON.stringify(body)).toBe(200);
      const token = body.data!.token;
      expect(token).toMatch(/^dsh_/);
      expect(body.data!.user.email.toLowerCase()).toBe(email.toLowerCase());
      // The provider came back to the console with a code, not a token.
      expect(trip.returnedTo.pathname).toBe('/dashboard');
      expect(trip.returnedTo.href).not.toContain(token);
      const row = await t.db.one<{ days: number }>(
        sql('t.console_session_row', `SELECT extract(epoch FROM expires_at - now()) / 86400 AS days FROM dashboard_sessions WHERE token_hash = $1`),
        [hashSecret(token)],
      );
      expect(Number(row!.days)).toBeGreaterThan(29.9);
      const me = await get('/api/tracking/session', token);
      expect(me.status).toBe(200);
      expect((await json(me)).data.workspaces).toEqual([{ id: workspaceId, name: 'Brand', role: email === owner ? 'owner' : 'member' }]);
    }
  });

  it("the provider's page refuses a stranger in readable words, and nothing is written", async () => {
    const before = await t.db.one(counts);
    const trip = await providerTrip(service.url, `stranger-${tag}@else.example`);
    expect(trip.refusedPage?.status).toBe(400);
    expect(trip.refusedPage?.html).toContain(`No workspace member or invited person has the email stranger-${tag}@else.example`);
    expect(trip.refusedPage?.html).toContain('<label for="login">Email</label>');
    expect(await t.db.one(counts)).toEqual(before);
  });

  it('a sign-in is spent once: a replay, a wrong verifier and a made-up state are refused and write nothing', async () => {
    const trip = await providerTrip(service.url, owner);
    const code = trip.returnedTo.searchParams.get('code');
    const before = await t.db.one(counts);
    const wrongVerifier = await post('/api/tracking/session', { state: trip.state, code, code_verifier: 'x'.repeat(43) });
    expect(wrongVerifier.status).toBe(400);
    expect((await json(wrongVerifier)).error.message).toBe(M.console.verifierMismatch);
    const unknown = await post('/api/tracking/session', { state: 'A'.repeat(32), code, code_verifier: trip.verifier });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.message).toBe(M.console.signInNotFound);
    expect(await t.db.one(counts)).toEqual(before);

    const first = await post('/api/tracking/session', { state: trip.state, code, code_verifier: trip.verifier });
    expect(first.status).toBe(200);
    const again = await post('/api/tracking/session', { state: trip.state, code, code_verifier: trip.verifier });
    expect(again.status).toBe(404);
    expect((await json(again)).error.message).toBe(M.console.signInNotFound);
  });

  it('a sign-in older than 10 minutes is refused as late', async () => {
    const trip = await providerTrip(service.url, owner);
    await t.db.many(sql('t.console_sign_in_age', `UPDATE console_sign_ins SET expires_at = now() - interval '1 second' WHERE state = $1`), [trip.state]);
    const res = await post('/api/tracking/session', { state: trip.state, code: trip.returnedTo.searchParams.get('code'), code_verifier: trip.verifier });
    expect(res.status).toBe(400);
    expect((await json(res)).error.message).toBe(M.console.signInExpired);
  });

  it('a suspended member is refused (ACCOUNT_BLOCKED) and gets no session', async () => {
    const email = `suspended-${tag}@brand.example`;
    await addMember(t.db, workspaceId, email, 'member');
    await suspendUser(t.db, email);
    const before = await t.db.one(counts);
    const { status, body } = await signInThroughProvider(service.url, email);
    expect(status).toBe(403);
    expect(body.error!.message).toBe(M.cli.suspended);
    expect(await t.db.one(counts)).toEqual(before);
  });

  it('an invited person who has no account yet signs in, then accepts the invite once', async () => {
    const email = `invitee-${tag}@brand.example`;
    const ownerId = (await t.db.one<{ id: number }>(sql('t.console_owner_id', `SELECT id FROM users WHERE email = $1`), [owner]))!.id;
    const invite = await inviteMember(t.db, { workspaceId, email, role: 'member', invitedBy: Number(ownerId) }, { actor: { type: 'user', id: Number(ownerId) }, requestId: 'test' });
    const { status, body } = await signInThroughProvider(service.url, email);
    expect(status, JSON.stringify(body)).toBe(200);
    const token = body.data!.token;
    expect((await json(await get('/api/tracking/session', token))).data.workspaces).toEqual([]);
    const accepted = await post('/api/tracking/invites/accept', { token: invite.token }, token);
    expect(accepted.status).toBe(200);
    expect((await json(accepted)).data).toEqual({ workspace_id: workspaceId, role: 'member' });
    expect((await json(await get('/api/tracking/session', token))).data.workspaces).toEqual([{ id: workspaceId, name: 'Brand', role: 'member' }]);
    const twice = await post('/api/tracking/invites/accept', { token: invite.token }, token);
    expect(twice.status).toBe(404);
    expect((await json(twice)).error.message).toBe(M.team.inviteGone);
  });

  it('"Cancel" on the provider page comes back to the console with access_denied', async () => {
    const started = await post('/api/tracking/session/sign-in', { code_challenge: 'c'.repeat(43) });
    const { authorization_url } = (await json(started)).data as { authorization_url: string };
    const toInteraction = await fetch(authorization_url, { redirect: 'manual' });
    const cookie = toInteraction.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const interaction = new URL(toInteraction.headers.get('location')!, authorization_url);
    const aborted = await fetch(new URL(`${interaction.pathname}/abort`, interaction), { redirect: 'manual', headers: { cookie } });
    const resumed = await fetch(new URL(aborted.headers.get('location')!, interaction), { redirect: 'manual', headers: { cookie } });
    const back = new URL(resumed.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(`${service.url}/dashboard`);
    expect(back.searchParams.get('error')).toBe('access_denied');
  });

  it('refuses bad input with the field named and writes nothing', async () => {
    const before = await t.db.one(counts);
    const cases: [string, unknown, string][] = [
      ['/api/tracking/session/sign-in', {}, M.console.codeChallenge],
      ['/api/tracking/session/sign-in', { code_challenge: 'short' }, M.console.codeChallenge],
      ['/api/tracking/session/sign-in', { code_challenge: 'c'.repeat(43), extra: 1 }, M.body.unknownField(['extra'])],
      ['/api/tracking/session', { state: 'A'.repeat(32), code: 'x', code_verifier: 'short' }, M.console.codeVerifier],
      ['/api/tracking/session', { state: '../', code: 'x', code_verifier: 'v'.repeat(43) }, M.console.state],
      ['/api/tracking/session', { state: 'A'.repeat(32), code: '', code_verifier: 'v'.repeat(43) }, M.console.code],
    ];
    for (const [path, body, message] of cases) {
      const res = await post(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const answer = (await res.json()) as { data: null; error: { message: string } };
      expect(answer.error.message).toBe(message);
      expect(answer.data).toBeNull();
    }
    expect(await t.db.one(counts)).toEqual(before);
  });

  it('sign-out revokes the session: the next call is 401', async () => {
    const { body } = await signInThroughProvider(service.url, member);
    const token = body.data!.token;
    const out = await fetch(`${service.url}/api/tracking/session`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    expect(out.status).toBe(200);
    expect((await get('/api/tracking/session', token)).status).toBe(401);
  });
});
