/**
 * Request and response schemas of the console's routes (issue 33): sign-in, the team, allowed
 * origins one at a time, the partner list and a partner's further links, a program's settings.
 */
import { z } from 'zod';
import { PARTNER_STATUSES } from '../../domain/programs/partner-list.js';
import { canonicalOrigin } from '../../domain/programs/origins.js';
import { M } from '../http/messages.js';
import { body, programIdParam, text } from '../http/schemas.js';
import { Program } from './schemas.js';

const C = M.console;
const T = M.team;

// ---- Sign-in ----

/** RFC 7636: a verifier is 43 to 128 of these; its S256 challenge is 43 base64url characters. */
const PKCE = /^[A-Za-z0-9._~-]{43,128}$/;

export const SignInStartRequest = body({
  code_challenge: z.string({ error: C.codeChallenge }).regex(/^[A-Za-z0-9_-]{43}$/, C.codeChallenge),
});
export const SignInStarted = z.object({
  state: z.string(),
  authorization_url: z.string(),
  redirect_uri: z.string(),
  expires_at: z.string(),
});

export const SignInCompleteRequest = body({
  state: z.string({ error: C.state }).regex(/^[A-Za-z0-9_-]{16,64}$/, C.state),
  code: text(2048, C.code),
  code_verifier: z.string({ error: C.codeVerifier }).regex(PKCE, C.codeVerifier),
});
export const SignedIn = z.object({
  token: z.string(),
  expires_at: z.string(),
  user: z.object({ id: z.number().int(), email: z.string(), name: z.string().nullable() }),
});

export const Role = z.enum(['owner', 'member'], { error: T.role });

export const Me = z.object({
  user: z.object({ id: z.number().int(), email: z.string(), name: z.string().nullable() }),
  workspaces: z.array(z.object({ id: z.number().int(), name: z.string(), role: z.enum(['owner', 'member']) })),
});

// ---- Team ----

const positive = (message: string) =>
  z
    .string({ error: message })
    .regex(/^[1-9][0-9]{0,14}$/, message)
    .transform(Number);

export const WorkspaceParams = z.object({ workspaceId: positive(T.workspaceId) });
export const MemberParams = WorkspaceParams.extend({ userId: positive(T.userId) });
export const InviteParams = WorkspaceParams.extend({ inviteId: positive(T.inviteId) });

export const InviteRequest = body({
  email: z.email({ error: T.email }).max(320, T.email),
  role: Role,
});
export const RoleRequest = body({ role: Role });
export const AcceptInviteRequest = body({ token: z.string({ error: T.token }).regex(/^inv_[A-Za-z0-9_-]{32}$/, T.token) });

const Member = z.object({
  user_id: z.number().int(),
  email: z.string(),
  name: z.string().nullable(),
  role: z.enum(['owner', 'member']),
  joined_at: z.string(),
  suspended: z.boolean(),
});
const Invite = z.object({
  id: z.number().int(),
  email: z.string(),
  role: z.enum(['owner', 'member']),
  invited_by: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});
export const Team = z.object({ workspace_id: z.number().int(), members: z.array(Member), invites: z.array(Invite) });
export const InviteIssued = Invite.extend({
  /** The one-time link, shown once: its token is kept only as a hash. */
  invite_url: z.string(),
});
export const InviteAccepted = z.object({ workspace_id: z.number().int(), role: z.enum(['owner', 'member']) });

// ---- Programs: one program, its origins ----

const BlockedOrigin = z.object({ origin: z.string(), attempts: z.number().int(), first_seen_at: z.string(), last_seen_at: z.string() });
/** A program with what its settings screen shows beside the settings: origins whose clicks were refused. */
export const ProgramDetail = Program.extend({ blocked_origins: z.array(BlockedOrigin) });

export const OriginRequest = body({
  origin: z.string({ error: M.management.origin }).transform((value, ctx) => {
    const origin = canonicalOrigin(value);
    if (!origin) ctx.addIssue({ code: 'custom', message: M.management.origin });
    return origin ?? z.NEVER;
  }),
});
export const OriginQuery = z.strictObject(
  {
    origin: z.string({ error: M.management.origin }).transform((value, ctx) => {
      const origin = canonicalOrigin(value);
      if (!origin) ctx.addIssue({ code: 'custom', message: M.management.origin });
      return origin ?? z.NEVER;
    }),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys) : M.dashboard.badQuery) },
);
export const Origins = z.object({ allowed_origins: z.array(z.string()) });

// ---- Partners ----

export const PartnerListQuery = z.strictObject(
  {
    search: z.string({ error: M.management.search }).max(100, M.management.search).optional(),
    status: z.enum(PARTNER_STATUSES, { error: M.management.partnerStatus }).optional(),
    limit: z.coerce.number({ error: M.management.partnerLimit }).int(M.management.partnerLimit).min(1, M.management.partnerLimit).max(500, M.management.partnerLimit).default(100),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? M.dashboard.unknownQuery(issue.keys) : M.dashboard.badQuery) },
);

const Money = z.object({ currency: z.string(), amount_minor: z.number().int() });
export const PartnerListItem = z.object({
  partner_id: z.number().int().nullable(),
  partner_program_id: z.number().int(),
  name: z.string().nullable(),
  email: z.string().nullable(),
  status: z.enum(PARTNER_STATUSES),
  group_id: z.number().int().nullable().describe('The partner group it is in (GET .../groups), null when none'),
  created_at: z.string(),
  links: z.array(z.object({ aff_code: z.string(), enabled: z.boolean(), referral_url: z.string() })),
  /** All-time totals from the warehouse as of meta.totals_as_of; null while computing or without a warehouse. */
  clicks: z.number().int().nullable(),
  sales: z.number().int().nullable(),
  revenue: z.array(Money).nullable(),
  commission: z.array(Money).nullable(),
  /** The ledger's balance (issue 34) per currency, as of now: the sum of the partner's entries (owed, payable or in a payout); [] before any. */
  balance: z.array(Money),
});
export const PartnerList = z.object({
  data: z.array(PartnerListItem),
  meta: z.object({
    total: z.number().int(),
    shown: z.number().int(),
    /** warehouse: the totals, as of totals_as_of (computed at most once a minute); computing: not yet; unavailable: no warehouse. */
    totals: z.enum(['warehouse', 'computing', 'unavailable']),
    totals_as_of: z.string().nullable(),
  }),
});

export const PartnerParams = programIdParam.extend({ partnerId: positive(M.management.partnerId) });
export const PartnerLinkRequest = body({
  aff_code: z.string({ error: M.management.affCode }).regex(/^[A-Za-z0-9_-]{3,64}$/, M.management.affCode).optional(),
});
export const PartnerLink = z.object({ id: z.number().int(), aff_code: z.string(), enabled: z.boolean(), referral_url: z.string(), created_at: z.string() });
