import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { buildTestApp, createTestProgram, createTestWorkspace, DOCS_BASE_URL, freshIp, type TestProgram, type Workspace } from '../../support/app.js';
import { authorizeProgram, authorizeWorkspace, decide, isAgentScope, PERMISSIONS as ALL_PERMISSIONS, type Permission, type Principal } from '../../../domain/access/access.js';

/** The permissions roles and program keys are about; agent scopes are tested in tests/ingest/agent/agent-api.test.ts. */
const PERMISSIONS = ALL_PERMISSIONS.filter((p) => !isAgentScope(p));
import { addMember, createSession } from '../../../domain/access/workspaces.js';
import { CREDENTIALS, credentialOf, parseSessionHeader, programKeyHook, REQUIREMENTS, type Answer, type Family } from '../../../ingest/http/auth.js';
import { M } from '../../../ingest/http/messages.js';

const session = (userId: number): Principal => ({ kind: 'session', userId });
const programKey = (programId: number, workspaceId: number): Principal => ({ kind: 'programKey', programId, workspaceId, keyId: 'k', rotation: null });
const agent = (workspaceId: number, scopes: Permission[]): Principal => ({ kind: 'agentKey', keyId: 'a', workspaceId, scopes });

describe('the permission check', () => {
  const inProgram = (role: 'owner' | 'member' | null) => ({ workspaceId: 7, programId: 70, role });

  it('grants roles: members read and edit programs, only owners manage the key, the processor connection, the terms, the team, webhooks and money', () => {
    const table = (role: 'owner' | 'member' | null) => Object.fromEntries(PERMISSIONS.map((p) => [p, decide(session(1), inProgram(role), p)]));
    expect(table('owner')).toEqual({
      'tracking:read': 'allowed',
      'tracking:write': 'missing-permission',
      'program:write': 'allowed',
      'api_key:manage': 'allowed',
      'processor:manage': 'allowed',
      'terms:write': 'allowed',
      'team:manage': 'allowed',
      'webhooks:manage': 'allowed',
      'money:write': 'allowed',
      'fx_rates:write': 'allowed',
      'partners:manage': 'allowed',
    });
    expect(table('member')).toEqual({
      'tracking:read': 'allowed',
      'tracking:write': 'missing-permission',
      'program:write': 'allowed',
      'api_key:manage': 'missing-permission',
      'processor:manage': 'missing-permission',
      'terms:write': 'missing-permission',
      'team:manage': 'missing-permission',
      'webhooks:manage': 'missing-permission',
      'money:write': 'missing-permission',
      'fx_rates:write': 'missing-permission',
      'partners:manage': 'missing-permission',
    });
    expect(table(null)).toEqual({
      'tracking:read': 'not-member',
      'tracking:write': 'not-member',
      'program:write': 'not-member',
      'api_key:manage': 'not-member',
      'processor:manage': 'not-member',
      'terms:write': 'not-member',
      'team:manage': 'not-member',
      'webhooks:manage': 'not-member',
      'money:write': 'not-member',
      'fx_rates:write': 'not-member',
      'partners:manage': 'not-member',
    });
  });

  it('an account login token acts through the same roles as a session', () => {
    for (const role of ['owner', 'member', null] as const) {
      for (const p of PERMISSIONS) expect(decide({ kind: 'account', userId: 1 }, inProgram(role), p)).toBe(decide(session(1), inProgram(role), p));
    }
  });

  it('a program key reaches its own program only, to record and read events', () => {
    const own = programKey(70, 7);
    expect(decide(own, inProgram(null), 'tracking:write')).toBe('allowed');
    expect(decide(own, inProgram(null), 'tracking:read')).toBe('allowed');
    expect(decide(own, inProgram(null), 'api_key:manage')).toBe('missing-permission');
    expect(decide(own, { workspaceId: 7, programId: 71, role: null }, 'tracking:read')).toBe('not-member');
    // A workspace-wide action (creating a program) is never a program key's.
    expect(decide(own, { workspaceId: 7, role: null }, 'program:write')).toBe('not-member');
  });

  it('an agent key reaches its own workspace only, with exactly its scopes', () => {
    const reader = agent(7, ['tracking:read']);
    expect(decide(reader, inProgram(null), 'tracking:read')).toBe('allowed');
    expect(decide(reader, inProgram(null), 'program:write')).toBe('missing-permission');
    expect(decide(reader, { workspaceId: 8, programId: 80, role: null }, 'tracking:read')).toBe('not-member');
  });
});

describe('credentials', () => {
  it('a session rides in Authorization with or without the Bearer scheme', () => {
    expect(parseSessionHeader(undefined)).toEqual({ kind: 'absent' });
    expect(parseSessionHeader('  ')).toEqual({ kind: 'absent' });
    expect(parseSessionHeader('dsh_x')).toEqual({ kind: 'token', token: 'dsh_x' });
    expect(parseSessionHeader('Bearer  dsh_x ')).toEqual({ kind: 'token', token: 'dsh_x' });
  });

  it('every credential of the spec is resolved (a null entry would fail at start-up)', () => {
    expect(CREDENTIALS.account).not.toBeNull();
    expect(CREDENTIALS.agentKey).not.toBeNull();
    expect(() => credentialOf('session')).not.toThrow();
  });

  it('a program-key route whose anonymous flag disagrees with the table does not start', () => {
    const db = { kind: 'postgres' } as never; // never queried: the hook is only built
    const throttle = undefined as never;
    expect(() => programKeyHook(db, { surface: 'sale', anonymousAllowed: true, docsBaseUrl: DOCS_BASE_URL, throttle })).toThrow(/requirement table/);
    expect(() => programKeyHook(db, { surface: 'click', anonymousAllowed: true, docsBaseUrl: DOCS_BASE_URL, throttle })).not.toThrow();
  });
});

/**
 * The spec's rules, as statuses per case. The requirement table must say the same, and each
 * route family must answer what the table says.
 */
const SPEC_STATUS: Record<Family, Record<string, number>> = {
  click: { malformed: 401, invalid: 401 },
  lead: { malformed: 401, invalid: 401 },
  sale: { malformed: 401, missing: 401, invalid: 401 },
  refund: { malformed: 401, missing: 401, invalid: 401 },
  readiness: { malformed: 401, missing: 401, invalid: 401 },
  // Authentication rule 6: 403 for no session, a non-member and an unknown program.
  performance: { malformed: 403, missing: 403, invalid: 403, unknownProgram: 403, notMember: 403, missingPermission: 403 },
  // Status: 401 without a session, 404 for an unknown program, 403 without tracking:read.
  status: { malformed: 401, missing: 401, invalid: 401, unknownProgram: 404, notMember: 403, missingPermission: 403 },
  management: { malformed: 401, missing: 401, invalid: 401, unknownProgram: 403, notMember: 403, missingPermission: 403 },
  // The workspace's team (issue 33): 401 without a session, 403 for a stranger's or unknown workspace and for a member who is not owner.
  team: { malformed: 401, missing: 401, invalid: 401, unknownProgram: 403, notMember: 403, missingPermission: 403 },
  // CLI: account-token 401s (log in again), 403 for an advertiser_id not the account's; program-key 401s.
  cliInit: { malformed: 401, missing: 401, invalid: 401, unknownUser: 401, notMember: 403, missingPermission: 403, noWorkspace: 403 },
  cliPrograms: { malformed: 401, missing: 401, invalid: 401, unknownUser: 401 },
  // svc payouts (issue 34): account-token 401s; a program the account's advertisers do not hold is 404 like an unknown one.
  cliProgram: { malformed: 401, missing: 401, invalid: 401, unknownUser: 401, unknownProgram: 404, notMember: 404, missingPermission: 404 },
  cliProgramKey: { malformed: 401, missing: 401, invalid: 401 },
  // Agent API (issue 13): 401 without an agent key, 404 for another workspace's or an unknown program, 403 without the scope.
  agent: { malformed: 401, missing: 401, invalid: 401, unknownProgram: 404, notMember: 404, missingPermission: 403 },
};

describe('the requirement table', () => {
  it('says, for every family and case, the status of the spec rule', () => {
    for (const [family, cases] of Object.entries(SPEC_STATUS) as [Family, Record<string, number>][]) {
      const refuse = REQUIREMENTS[family].refuse as Record<string, Answer | ((p: Permission) => Answer)>;
      for (const [which, status] of Object.entries(cases)) {
        const entry = refuse[which]!;
        const answer = typeof entry === 'function' ? entry('tracking:read') : entry;
        expect(answer.status, `${family} ${which}`).toBe(status);
      }
    }
  });

  it('names the credential and the anonymous calls of the spec', () => {
    const credentials = Object.fromEntries(Object.entries(REQUIREMENTS).map(([f, r]) => [f, [r.credential, r.anonymous]]));
    expect(credentials).toEqual({
      click: ['programKey', true],
      lead: ['programKey', true],
      sale: ['programKey', false],
      refund: ['programKey', false],
      readiness: ['programKey', false],
      performance: ['session', false],
      status: ['session', false],
      management: ['session', false],
      team: ['session', false],
      cliInit: ['account', false],
      cliPrograms: ['account', false],
      cliProgram: ['account', false],
      cliProgramKey: ['programKey', false],
      agent: ['agentKey', false],
    });
  });

  it('tells a member who is not owner who may manage the key, and refund answers an empty token as invalid', () => {
    expect(REQUIREMENTS.management.refuse.missingPermission('api_key:manage').message).toBe(M.management.ownerOnly);
    expect(REQUIREMENTS.management.refuse.missingPermission('program:write').message).toBe(M.management.forbidden);
    expect(REQUIREMENTS.management.refuse.missingPermission('money:write').message).toBe(M.money.ownerOnly);
    expect(REQUIREMENTS.refund.refuse.missing.message).toBe(M.auth.invalid);
    expect(REQUIREMENTS.readiness.refuse.invalid).toEqual({ status: 401, message: M.readiness.invalid, code: 'invalid_key' });
  });
});

describe.each(databaseKinds())('authentication and permissions on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;
  let stranger: Workspace;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db);
    stranger = await createTestWorkspace(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const principalOf = async (token: string) => (await credentialOf('session').resolve(t.db, token))!;
  const unknownProgram = () => program.programId + 987_654;

  it('resolves a session by its hash into a session principal; an unknown or expired token into nothing', async () => {
    const owner = await principalOf(program.workspace.ownerToken);
    expect(owner).toEqual({ kind: 'session', userId: expect.any(Number) });
    expect(await credentialOf('session').resolve(t.db, 'dsh_nope')).toBeUndefined();
    const userId = await addMember(t.db, program.workspace.workspaceId, `expired-${kind}@test.example`, 'owner');
    const expired = await createSession(t.db, userId, new Date(Date.now() - 1000));
    expect(await credentialOf('session').resolve(t.db, expired)).toBeUndefined();
  });

  it('resolves a program key into its program, with the key hash as key id and no rotation', async () => {
    const key = await credentialOf('programKey').resolve(t.db, program.apiKey);
    expect(key).toEqual({ kind: 'programKey', programId: program.programId, workspaceId: program.workspace.workspaceId, keyId: expect.stringMatching(/^[0-9a-f]{64}$/), rotation: null });
    expect(await credentialOf('programKey').resolve(t.db, `${program.apiKey}x`)).toBeUndefined();
  });

  it('authorizeProgram: allowed with the program, unknown program, not a member, missing permission', async () => {
    const owner = await principalOf(program.workspace.ownerToken);
    const member = await principalOf(program.workspace.memberToken);
    const outsider = await principalOf(stranger.ownerToken);
    const allowed = await authorizeProgram(t.db, member, 'tracking:read', program.programId);
    expect(allowed).toEqual({ outcome: 'allowed', program: { id: program.programId, workspaceId: program.workspace.workspaceId, createdAt: expect.any(Date), reportingCurrency: 'USD' } });
    expect(await authorizeProgram(t.db, owner, 'api_key:manage', program.programId)).toMatchObject({ outcome: 'allowed' });
    expect(await authorizeProgram(t.db, member, 'api_key:manage', program.programId)).toEqual({ outcome: 'missing-permission', permission: 'api_key:manage' });
    expect(await authorizeProgram(t.db, outsider, 'tracking:read', program.programId)).toEqual({ outcome: 'not-member' });
    expect(await authorizeProgram(t.db, owner, 'tracking:read', unknownProgram())).toEqual({ outcome: 'unknown-program' });
    // Keys: a program key its own program only; an agent key its workspace only, within its scopes.
    const key = programKey(program.programId, program.workspace.workspaceId);
    expect(await authorizeProgram(t.db, key, 'tracking:read', program.programId)).toMatchObject({ outcome: 'allowed' });
    const other = await createTestProgram(app, t.db, {}, stranger);
    expect(await authorizeProgram(t.db, key, 'tracking:read', other.programId)).toEqual({ outcome: 'not-member' });
    const reader = agent(program.workspace.workspaceId, ['tracking:read']);
    expect(await authorizeProgram(t.db, reader, 'tracking:read', program.programId)).toMatchObject({ outcome: 'allowed' });
    expect(await authorizeProgram(t.db, reader, 'program:write', program.programId)).toEqual({ outcome: 'missing-permission', permission: 'program:write' });
    expect(await authorizeProgram(t.db, reader, 'tracking:read', other.programId)).toEqual({ outcome: 'not-member' });
  });

  it('authorizeWorkspace: members may create programs in their workspace; an unknown workspace is not theirs', async () => {
    const member = await principalOf(program.workspace.memberToken);
    expect(await authorizeWorkspace(t.db, member, 'program:write', program.workspace.workspaceId)).toEqual({ outcome: 'allowed' });
    expect(await authorizeWorkspace(t.db, member, 'api_key:manage', program.workspace.workspaceId)).toEqual({ outcome: 'missing-permission', permission: 'api_key:manage' });
    expect(await authorizeWorkspace(t.db, member, 'program:write', stranger.workspaceId)).toEqual({ outcome: 'not-member' });
    expect(await authorizeWorkspace(t.db, member, 'program:write', 987_654_321)).toEqual({ outcome: 'not-member' });
  });

  /** One request per family and case, with the credential that provokes that case. */
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const NO_HEADER = {};
  const keyCases = { malformed: { authorization: 'Basic x' }, missing: { authorization: 'Bearer' }, invalid: bearer('aff_not-a-key') };
  const keyRoutes = {
    click: ['POST', '/api/v1/track/click'],
    lead: ['POST', '/api/v1/track/lead'],
    sale: ['POST', '/api/v1/track/sale'],
    refund: ['POST', '/api/v1/track/refund'],
    readiness: ['GET', '/api/v1/programs/me/readiness'],
  } as const;

  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) =>
    app.inject({ method, url, headers: { 'x-forwarded-for': freshIp(), ...headers }, ...(payload ? { payload } : {}) });

  const expectAnswer = (res: { statusCode: number; json(): { error: { message: string; code?: string } } }, answer: Answer, what: string) => {
    expect(res.statusCode, what).toBe(answer.status);
    expect(res.json().error.message, what).toBe(answer.message);
    if (answer.code) expect(res.json().error.code, what).toBe(answer.code);
  };

  it('program-key families answer each bad credential with their row of the table', async () => {
    for (const [family, [method, url]] of Object.entries(keyRoutes) as [keyof typeof keyRoutes, (typeof keyRoutes)[keyof typeof keyRoutes]][]) {
      const { refuse, anonymous } = REQUIREMENTS[family];
      const cases: [keyof typeof keyCases | 'absent', Record<string, string>][] = [['absent', NO_HEADER], ...(Object.entries(keyCases) as [keyof typeof keyCases, Record<string, string>][])];
      for (const [which, headers] of cases) {
        const res = await send(method, url, headers, method === 'POST' ? {} : undefined);
        if (anonymous && (which === 'absent' || which === 'missing')) {
          // Anonymous (browser-mode) call: past authentication, refused or not for other reasons.
          expect(res.statusCode, `${family} ${which}`).not.toBe(401);
          continue;
        }
        expectAnswer(res, refuse[which === 'absent' ? 'malformed' : which], `${family} ${which}`);
      }
    }
  });

  it('session families answer a missing, empty, unknown token or a program key with their row', async () => {
    const routes = {
      performance: ['GET', `/api/tracking/performance/${program.programId}`],
      status: ['GET', `/api/tracking/status/${program.programId}`],
      management: ['PATCH', `/api/tracking/programs/${program.programId}`],
    } as const;
    for (const [family, [method, url]] of Object.entries(routes) as [keyof typeof routes, (typeof routes)[keyof typeof routes]][]) {
      const { refuse } = REQUIREMENTS[family];
      for (const headers of [NO_HEADER, { authorization: 'Bearer' }, bearer('dsh_unknown'), bearer(program.apiKey)]) {
        expectAnswer(await send(method, url, headers, method === 'PATCH' ? { name: 'x' } : undefined), refuse.invalid, `${family} ${JSON.stringify(headers)}`);
      }
    }
  });

  it('session families answer an unknown program, a non-member and a missing permission with their row', async () => {
    type Path = (id: number) => ['GET' | 'POST', string];
    const paths: Record<'performance' | 'status' | 'management', Path> = {
      performance: (id) => ['GET', `/api/tracking/performance/${id}`],
      status: (id) => ['GET', `/api/tracking/status/${id}`],
      management: (id) => ['POST', `/api/tracking/programs/${id}/api-key`],
    };
    for (const [family, path] of Object.entries(paths) as [keyof typeof paths, Path][]) {
      const { refuse } = REQUIREMENTS[family];
      const [method, unknownUrl] = path(unknownProgram());
      expectAnswer(await send(method, unknownUrl, bearer(program.workspace.ownerToken)), refuse.unknownProgram, `${family} unknown program`);
      const [, url] = path(program.programId);
      expectAnswer(await send(method, url, bearer(stranger.ownerToken)), refuse.notMember, `${family} non-member`);
    }
    // Among today's routes and roles only the key is refused for a missing permission (member, not owner).
    const res = await send('POST', `/api/tracking/programs/${program.programId}/api-key`, bearer(program.workspace.memberToken));
    expectAnswer(res, REQUIREMENTS.management.refuse.missingPermission('api_key:manage'), 'management member on the key');
  });

  it('creating a program in a workspace of which one is not a member is the management 403', async () => {
    const res = await send('POST', '/api/tracking/programs', bearer(stranger.ownerToken), {
      name: 'x',
      domain: 'x.example',
      commission_type: 'fixed',
      commission_rate: 1,
      workspace_id: program.workspace.workspaceId,
    });
    expectAnswer(res, REQUIREMENTS.management.refuse.notMember, 'create in another workspace');
  });
});
