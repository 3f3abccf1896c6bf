import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { addMember, createSession, createWorkspace, reinstateUser, suspendUser } from '../../../domain/access/workspaces.js';
import { M } from '../../../ingest/http/messages.js';
import { buildTestApp, createTestProgram, createTestWorkspace } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const teamCounts = sql(
  't.team_counts',
  `SELECT (SELECT count(*)::int FROM members) AS members, (SELECT count(*)::int FROM workspace_invites) AS invites,
          (SELECT count(*)::int FROM workspace_invites WHERE revoked_at IS NOT NULL) AS revoked,
          (SELECT count(*)::int FROM users) AS users`,
);

describe.each(databaseKinds())('the workspace team: invites, roles, removal (%s)', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let workspaceId: number;
  let ownerToken: string;
  let memberToken: string;
  let memberId: number;
  let tag = 0;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  /** A fresh workspace per test: an owner and a member, each signed in. */
  async function fresh() {
    tag += 1;
    workspaceId = await createWorkspace(t.db, `Team ${tag}`);
    const ownerId = await addMember(t.db, workspaceId, `owner-${kind}-${tag}@team.example`, 'owner');
    memberId = await addMember(t.db, workspaceId, `member-${kind}-${tag}@team.example`, 'member');
    ownerToken = await createSession(t.db, ownerId);
    memberToken = await createSession(t.db, memberId);
    return { ownerId, memberId };
  }

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: unknown) =>
    app.inject({ method, url: `/api/tracking${url}`, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const invite = (email: string, role = 'member', token = ownerToken) => call('POST', `/workspaces/${workspaceId}/invites`, token, { email, role });
  const tokenOf = (url: string) => /#invite=(inv_[A-Za-z0-9_-]+)$/.exec(url)![1]!;

  it('every member sees the team; an owner invites with a one-time link, kept only as a hash', async () => {
    await fresh();
    const res = await invite('New.Person@Team.example', 'owner');
    expect(res.statusCode).toBe(200);
    const issued = res.json().data;
    expect(issued).toMatchObject({ email: 'new.person@team.example', role: 'owner' });
    expect(issued.invite_url).toMatch(/^http:\/\/localhost(:\d+)?\/dashboard#invite=inv_[A-Za-z0-9_-]{32}$/);
    const stored = await t.db.one<{ token_hash: string }>(sql('t.invite_hash', `SELECT token_hash FROM workspace_invites WHERE id = $1`), [issued.id]);
    expect(stored!.token_hash).toBe(hashSecret(tokenOf(issued.invite_url)));

    const seen = await call('GET', `/workspaces/${workspaceId}/team`, memberToken);
    expect(seen.statusCode).toBe(200);
    const team = seen.json().data;
    expect(team.members.map((m: { role: string }) => m.role)).toEqual(['owner', 'member']);
    expect(team.invites).toHaveLength(1);
    expect(JSON.stringify(team)).not.toContain('inv_');
  });

  it('a member is refused every change of the team, and nothing is written', async () => {
    const { ownerId } = await fresh();
    const before = await t.db.one(teamCounts);
    const refusals = [
      await invite('someone@team.example', 'member', memberToken),
      await call('PATCH', `/workspaces/${workspaceId}/members/${memberId}`, memberToken, { role: 'owner' }),
      await call('DELETE', `/workspaces/${workspaceId}/members/${ownerId}`, memberToken),
    ];
    for (const res of refusals) {
      expect(res.statusCode).toBe(403);
      expect(res.json().error.message).toBe(M.team.ownerOnly);
    }
    expect(await t.db.one(teamCounts)).toEqual(before);
  });

  it('a stranger and an unknown workspace get the same 403; no session is 401', async () => {
    await fresh();
    const stranger = await createTestWorkspace(t.db);
    for (const id of [workspaceId, 999_999_999]) {
      const res = await call('GET', `/workspaces/${id}/team`, stranger.ownerToken);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.message).toBe(M.team.notMember);
    }
    const none = await app.inject({ method: 'GET', url: `/api/tracking/workspaces/${workspaceId}/team` });
    expect(none.statusCode).toBe(401);
  });

  it('an invite is accepted once, only by its email, before it expires, unless revoked or replaced', async () => {
    await fresh();
    const email = `invitee-${kind}-${tag}@team.example`;
    const first = tokenOf((await invite(email)).json().data.invite_url);
    const second = tokenOf((await invite(email)).json().data.invite_url);
    const inviteeId = await addMember(t.db, await createWorkspace(t.db, 'elsewhere'), email, 'owner');
    const invitee = await createSession(t.db, inviteeId);
    const accept = (token: string, session = invitee) => call('POST', '/invites/accept', session, { token });

    // The first link was replaced by the second: it no longer works.
    expect((await accept(first)).statusCode).toBe(404);
    // Someone else signed in cannot use it.
    const other = await accept(second, memberToken);
    expect(other.statusCode).toBe(403);
    expect(other.json().error.message).toBe(M.team.inviteEmail);
    const ok = await accept(second);
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data).toEqual({ workspace_id: workspaceId, role: 'member' });
    const again = await accept(second);
    expect(again.statusCode).toBe(404);
    expect(again.json().error.message).toBe(M.team.inviteGone);

    // Expired and revoked links.
    const late = (await invite(`late-${kind}-${tag}@team.example`)).json().data;
    await t.db.many(sql('t.invite_expire', `UPDATE workspace_invites SET expires_at = now() - interval '1 second' WHERE id = $1`), [late.id]);
    const lateUser = await createSession(t.db, await addMember(t.db, await createWorkspace(t.db, 'x'), late.email, 'owner'));
    expect((await accept(tokenOf(late.invite_url), lateUser)).statusCode).toBe(404);
    const revoked = (await invite(`revoked-${kind}-${tag}@team.example`)).json().data;
    const afterRevoke = await call('DELETE', `/workspaces/${workspaceId}/invites/${revoked.id}`, ownerToken);
    expect(afterRevoke.statusCode).toBe(200);
    expect(afterRevoke.json().data.invites.map((i: { id: number }) => i.id)).not.toContain(revoked.id);
    expect((await call('DELETE', `/workspaces/${workspaceId}/invites/${revoked.id}`, ownerToken)).statusCode).toBe(404);
  });

  it('inviting a member again is a conflict', async () => {
    await fresh();
    const res = await invite(`MEMBER-${kind}-${tag}@team.example`);
    expect(res.statusCode).toBe(409);
    expect(res.json().error.message).toBe(M.team.alreadyMember);
  });

  it('owners change roles and remove members, never the last owner; a removed member loses the workspace at once', async () => {
    const { ownerId } = await fresh();
    const program = await createTestProgram(app, t.db, {}, { workspaceId, ownerToken, memberToken });
    const demoteLast = await call('PATCH', `/workspaces/${workspaceId}/members/${ownerId}`, ownerToken, { role: 'member' });
    expect(demoteLast.statusCode).toBe(409);
    expect(demoteLast.json().error.message).toBe(M.team.lastOwner);
    const removeLast = await call('DELETE', `/workspaces/${workspaceId}/members/${ownerId}`, ownerToken);
    expect(removeLast.statusCode).toBe(409);

    const promoted = await call('PATCH', `/workspaces/${workspaceId}/members/${memberId}`, ownerToken, { role: 'owner' });
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json().data.members.map((m: { role: string }) => m.role)).toEqual(['owner', 'owner']);
    // Two owners now: the first may step down, by the second's hand.
    expect((await call('PATCH', `/workspaces/${workspaceId}/members/${ownerId}`, memberToken, { role: 'member' })).statusCode).toBe(200);
    const removed = await call('DELETE', `/workspaces/${workspaceId}/members/${ownerId}`, memberToken);
    expect(removed.statusCode).toBe(200);
    expect(removed.json().data.members.map((m: { user_id: number }) => m.user_id)).toEqual([memberId]);
    // The removed person's session is still theirs, but nothing of this workspace is.
    expect((await call('GET', `/workspaces/${workspaceId}/team`, ownerToken)).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: `/api/tracking/status/${program.programId}`, headers: { authorization: `Bearer ${ownerToken}` } })).statusCode).toBe(403);
    expect((await call('DELETE', `/workspaces/${workspaceId}/members/${ownerId}`, memberToken)).statusCode).toBe(404);
  });

  it('two owners demoting each other at once leave one owner', async () => {
    const { ownerId } = await fresh();
    await call('PATCH', `/workspaces/${workspaceId}/members/${memberId}`, ownerToken, { role: 'owner' });
    const [a, b] = await Promise.all([
      call('PATCH', `/workspaces/${workspaceId}/members/${memberId}`, ownerToken, { role: 'member' }),
      call('PATCH', `/workspaces/${workspaceId}/members/${ownerId}`, memberToken, { role: 'member' }),
    ]);
    // The one that comes second is refused: as the last owner (409), or, when the first finished
    // before its permission check, as no longer an owner (403).
    const codes = [a.statusCode, b.statusCode].sort();
    expect(codes[0]).toBe(200);
    expect([403, 409]).toContain(codes[1]);
    const owners = await t.db.one<{ n: number }>(sql('t.owners', `SELECT count(*)::int AS n FROM members WHERE workspace_id = $1 AND role = 'owner'`), [workspaceId]);
    expect(owners!.n).toBe(1);
  });

  it('suspension ends every session of the person at once; reinstating gives them back', async () => {
    await fresh();
    const email = `member-${kind}-${tag}@team.example`;
    const second = await createSession(t.db, memberId);
    await suspendUser(t.db, email);
    for (const token of [memberToken, second]) {
      const res = await call('GET', `/workspaces/${workspaceId}/team`, token);
      expect(res.statusCode).toBe(401);
      expect((await call('GET', '/session', token)).statusCode).toBe(401);
    }
    const seen = await call('GET', `/workspaces/${workspaceId}/team`, ownerToken);
    expect(seen.json().data.members.find((m: { user_id: number }) => m.user_id === memberId).suspended).toBe(true);
    await reinstateUser(t.db, email);
    expect((await call('GET', `/workspaces/${workspaceId}/team`, memberToken)).statusCode).toBe(200);
  });

  it('refuses bad input with the field named and writes nothing', async () => {
    await fresh();
    const before = await t.db.one(teamCounts);
    const cases: [string, string, unknown, string][] = [
      ['POST', `/workspaces/abc/invites`, { email: 'a@b.example', role: 'member' }, M.team.workspaceId],
      ['POST', `/workspaces/${workspaceId}/invites`, { email: 'not an email', role: 'member' }, M.team.email],
      ['POST', `/workspaces/${workspaceId}/invites`, { email: 'a@b.example', role: 'admin' }, M.team.role],
      ['POST', `/workspaces/${workspaceId}/invites`, { email: 'a@b.example' }, M.team.role],
      ['POST', `/workspaces/${workspaceId}/invites`, { email: 'a@b.example', role: 'member', note: 'x' }, M.body.unknownField(['note'])],
      ['PATCH', `/workspaces/${workspaceId}/members/0`, { role: 'owner' }, M.team.userId],
      ['PATCH', `/workspaces/${workspaceId}/members/${memberId}`, { role: 7 }, M.team.role],
      ['DELETE', `/workspaces/${workspaceId}/invites/-1`, undefined, M.team.inviteId],
      ['POST', '/invites/accept', { token: 'inv_short' }, M.team.token],
    ];
    for (const [method, url, payload, message] of cases) {
      const res = await call(method as 'POST', url, ownerToken, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(400);
      expect(res.json().error.message).toBe(message);
    }
    expect((await call('PATCH', `/workspaces/${workspaceId}/members/999999999`, ownerToken, { role: 'owner' })).statusCode).toBe(404);
    expect(await t.db.one(teamCounts)).toEqual(before);
  });
});
