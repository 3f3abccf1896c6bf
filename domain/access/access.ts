import { sql, type Database } from '../../core/db.js';
import type { Role } from './workspaces.js';

/**
 * The scopes an agent key (`agt_`, issue 13) may carry: each agent endpoint and MCP tool needs
 * exactly one. They are permissions like any other, granted only through a key's scopes.
 */
export const AGENT_SCOPES = [
  'programs:read',
  'reports:read',
  'sales:read',
  'commissions:read',
  // Issue 34: payouts and statements (balances and the ledger are commissions:read); no agent scope moves money.
  'payouts:read',
  'partners:read',
  'clicks:read',
  'partners:write',
  'links:write',
  'test_events:write',
  // Issue 32: the program's audit log (read only).
  'audit:read',
] as const;
export type AgentScope = (typeof AGENT_SCOPES)[number];

/** What a caller may do to a program or a workspace. */
export const PERMISSIONS = [
  'tracking:read',
  'tracking:write',
  'program:write',
  'api_key:manage',
  'processor:manage',
  // Issue 33: the commission terms (type, rate) and the workspace's team are owners' alone.
  'terms:write',
  'team:manage',
  // Issue 32: a program's outgoing webhook endpoints (create, change, rotate, test, delete, redeliver).
  'webhooks:manage',
  // Issue 34: every write that moves money (approve, reject, adjustments, payout settings, payouts).
  'money:write',
  // Issue 30: a workspace's own exchange rates (they change its converted totals).
  'fx_rates:write',
  // Issue 31: approve, reject or ban a partner, and make its portal sign-in link.
  'partners:manage',
  ...AGENT_SCOPES,
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const isAgentScope = (value: string): value is AgentScope => (AGENT_SCOPES as readonly string[]).includes(value);

/** When a program key was marked for rotation, and when it stops working. */
export interface KeyRotation {
  markedAt: Date;
  deadline: Date;
}

/**
 * Who is calling, whatever the credential. Each credential of the spec is one variant; a request
 * without one (click, browser-mode lead) has no principal.
 */
export type Principal =
  /** Program API key: scope is its one program. keyId is the key's hash (what rate limits count). */
  | { kind: 'programKey'; programId: number; workspaceId: number; keyId: string; rotation: KeyRotation | null }
  /** Dashboard session of a signed-in user: acts through the user's workspace roles. */
  | { kind: 'session'; userId: number }
  /** Account login token from the CLI browser login (issue 16): acts through the user's roles, like a session. */
  | { kind: 'account'; userId: number }
  /** Agent API key (`agt_`, issue 13): bound to one workspace, allowed exactly its scopes. */
  | { kind: 'agentKey'; keyId: string; workspaceId: number; scopes: readonly Permission[] };

export type CredentialKind = Principal['kind'];

/**
 * Every member reads and edits a program's settings, partners and links; only owners handle its
 * key, its processor connection, its commission terms, the workspace's team and money.
 */
const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: ['tracking:read', 'program:write', 'api_key:manage', 'processor:manage', 'terms:write', 'team:manage', 'webhooks:manage', 'money:write', 'fx_rates:write', 'partners:manage'],
  member: ['tracking:read', 'program:write'],
};

/** A program key records events and reads its own program's state (readiness, CLI status). */
const PROGRAM_KEY_PERMISSIONS: readonly Permission[] = ['tracking:write', 'tracking:read'];

/** How the principal stands to a workspace (and the program in it, when one is named). */
export interface Relation {
  workspaceId: number;
  programId?: number;
  /** The user's role in the workspace; null for a non-member and for key principals. */
  role: Role | null;
}

export type Decision = 'allowed' | 'not-member' | 'missing-permission';

/** The one permission check: what the principal's relation to the workspace grants, and whether it covers `permission`. */
export function decide(principal: Principal, relation: Relation, permission: Permission): Decision {
  let granted: readonly Permission[] | undefined;
  switch (principal.kind) {
    case 'session':
    case 'account':
      granted = relation.role ? ROLE_PERMISSIONS[relation.role] : undefined;
      break;
    case 'programKey':
      granted = relation.programId === principal.programId ? PROGRAM_KEY_PERMISSIONS : undefined;
      break;
    case 'agentKey':
      granted = relation.workspaceId === principal.workspaceId ? principal.scopes : undefined;
      break;
  }
  if (!granted) return 'not-member';
  return granted.includes(permission) ? 'allowed' : 'missing-permission';
}

const userOf = (principal: Principal): number | null =>
  principal.kind === 'session' || principal.kind === 'account' ? principal.userId : null;

const q = {
  // One round trip by primary key; a key principal passes no user, so no member row joins.
  program: sql(
    'access.program',
    `SELECT p.workspace_id AS "workspaceId", p.created_at AS "createdAt", p.reporting_currency AS "reportingCurrency", m.role
       FROM programs p LEFT JOIN members m ON m.workspace_id = p.workspace_id AND m.user_id = $2
      WHERE p.id = $1`,
  ),
  workspaceRole: sql('access.workspace_role', `SELECT role FROM members WHERE workspace_id = $1 AND user_id = $2`),
};

export interface AuthorizedProgram {
  id: number;
  workspaceId: number;
  createdAt: Date;
  /** The currency of its converted totals (issue 30), read with the rest: the performance answers need no second read. */
  reportingCurrency: string;
}

export type ProgramAuthorization =
  | { outcome: 'allowed'; program: AuthorizedProgram }
  | { outcome: 'unknown-program' }
  | { outcome: 'not-member' }
  | { outcome: 'missing-permission'; permission: Permission };

/** May the principal do `permission` on the program? Tells an unknown program apart; the HTTP table decides whether to show it. */
export async function authorizeProgram(db: Database, principal: Principal, permission: Permission, programId: number): Promise<ProgramAuthorization> {
  const row = await db.one<{ workspaceId: number; createdAt: Date; reportingCurrency: string; role: Role | null }>(q.program, [programId, userOf(principal)]);
  if (!row) return { outcome: 'unknown-program' };
  const workspaceId = Number(row.workspaceId);
  const decision = decide(principal, { workspaceId, programId, role: row.role }, permission);
  if (decision === 'allowed') {
    return { outcome: 'allowed', program: { id: programId, workspaceId, createdAt: row.createdAt, reportingCurrency: row.reportingCurrency } };
  }
  return decision === 'not-member' ? { outcome: 'not-member' } : { outcome: 'missing-permission', permission };
}

export type WorkspaceAuthorization = { outcome: 'allowed' } | { outcome: 'not-member' } | { outcome: 'missing-permission'; permission: Permission };

/** May the principal do `permission` in the workspace (create a program there)? An unknown workspace is one it is not a member of. */
export async function authorizeWorkspace(db: Database, principal: Principal, permission: Permission, workspaceId: number): Promise<WorkspaceAuthorization> {
  const userId = userOf(principal);
  const role = userId === null ? null : ((await db.one<{ role: Role }>(q.workspaceRole, [workspaceId, userId]))?.role ?? null);
  const decision = decide(principal, { workspaceId, role }, permission);
  if (decision === 'allowed') return { outcome: 'allowed' };
  return decision === 'not-member' ? { outcome: 'not-member' } : { outcome: 'missing-permission', permission };
}
