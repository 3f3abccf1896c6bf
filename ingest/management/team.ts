import type { Database } from '../../core/db.js';
import { acceptInvite, changeRole, inviteMember, removeMember, revokeInvite, teamOf } from '../../domain/access/team.js';
import { CONSOLE_PATH } from '../dashboard/page.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import type { ZodApp } from '../http/schemas.js';
import { AcceptInviteRequest, InviteAccepted, InviteIssued, InviteParams, InviteRequest, MemberParams, RoleRequest, Team, WorkspaceParams } from './console-schemas.js';
import { data, managementErrors } from './schemas.js';
import { sessionUserOf } from './session.js';

export interface TeamContext {
  db: Database;
  auth: Auth;
  /** The service's public base URL (PUBLIC_BASE_URL) for the invite link; the request's origin when undefined. */
  publicBaseUrl: () => string | undefined;
}

const config = { surface: 'management' as const };


async function teamView(db: Database, workspaceId: number) {
  const { members, invites } = await teamOf(db, workspaceId);
  return {
    workspace_id: workspaceId,
    members: members.map((m) => ({ ...m, user_id: Number(m.user_id), joined_at: m.joined_at.toISOString() })),
    invites: invites.map((i) => ({ ...i, id: Number(i.id), created_at: i.created_at.toISOString(), expires_at: i.expires_at.toISOString() })),
  };
}

/**
 * A workspace's team (dashboard session): every member sees it; owners invite (a one-time link,
 * shown once, its token kept as a hash), revoke invites, change roles and remove members, never
 * the last owner. The invited person accepts the link once signed in with the email it names.
 */
export function teamRoutes(app: ZodApp, { db, auth, publicBaseUrl }: TeamContext) {
  const session = auth.require('team');
  const errors = managementErrors;

  app.get(
    '/workspaces/:workspaceId/team',
    { config, ...session, schema: { summary: "A workspace's members and open invites", params: WorkspaceParams, response: { 200: data(Team), ...errors } } },
    async (request) => {
      const { workspaceId } = request.params;
      await auth.checkWorkspace(request, 'team', 'tracking:read', workspaceId);
      return { data: await teamView(db, workspaceId) };
    },
  );

  app.post(
    '/workspaces/:workspaceId/invites',
    {
      config,
      ...session,
      schema: { summary: 'Invite a person by email with a role (owners only; the link is shown once)', params: WorkspaceParams, body: InviteRequest, response: { 200: data(InviteIssued), ...errors } },
    },
    async (request) => {
      const { workspaceId } = request.params;
      await auth.checkWorkspace(request, 'team', 'team:manage', workspaceId);
      const invite = await inviteMember(db, { workspaceId, email: request.body.email, role: request.body.role, invitedBy: sessionUserOf(request) }, auditContextOf(request));
      // The token rides in the fragment: browsers never send it to a server or in a Referer.
      const base = publicBaseUrl() ?? `${request.protocol}://${request.host}`;
      const url = new URL(CONSOLE_PATH, base);
      url.hash = `invite=${invite.token}`;
      return {
        data: {
          id: invite.id, email: invite.email, role: invite.role, invited_by: null,
          created_at: invite.createdAt.toISOString(), expires_at: invite.expiresAt.toISOString(), invite_url: url.toString(),
        },
      };
    },
  );

  app.delete(
    '/workspaces/:workspaceId/invites/:inviteId',
    { config, ...session, schema: { summary: 'Revoke an open invite (owners only)', params: InviteParams, response: { 200: data(Team), ...errors } } },
    async (request) => {
      const { workspaceId, inviteId } = request.params;
      await auth.checkWorkspace(request, 'team', 'team:manage', workspaceId);
      await revokeInvite(db, workspaceId, inviteId, auditContextOf(request));
      return { data: await teamView(db, workspaceId) };
    },
  );

  app.patch(
    '/workspaces/:workspaceId/members/:userId',
    {
      config,
      ...session,
      schema: { summary: "Change a member's role (owners only; a workspace keeps an owner)", params: MemberParams, body: RoleRequest, response: { 200: data(Team), ...errors } },
    },
    async (request) => {
      const { workspaceId, userId } = request.params;
      await auth.checkWorkspace(request, 'team', 'team:manage', workspaceId);
      await changeRole(db, workspaceId, userId, request.body.role, auditContextOf(request));
      return { data: await teamView(db, workspaceId) };
    },
  );

  app.delete(
    '/workspaces/:workspaceId/members/:userId',
    { config, ...session, schema: { summary: 'Remove a member (owners only; never the last owner)', params: MemberParams, response: { 200: data(Team), ...errors } } },
    async (request) => {
      const { workspaceId, userId } = request.params;
      await auth.checkWorkspace(request, 'team', 'team:manage', workspaceId);
      await removeMember(db, workspaceId, userId, auditContextOf(request));
      return { data: await teamView(db, workspaceId) };
    },
  );

  app.post(
    '/invites/accept',
    {
      config,
      ...session,
      schema: { summary: 'Accept an invite link as the signed-in person (its email must match)', body: AcceptInviteRequest, response: { 200: data(InviteAccepted), ...errors } },
    },
    async (request) => {
      const accepted = await acceptInvite(db, sessionUserOf(request), request.body.token, auditContextOf(request));
      return { data: { workspace_id: accepted.workspaceId, role: accepted.role } };
    },
  );
}
