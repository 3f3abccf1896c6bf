import type { CredentialKind, Permission } from '../../../domain/access/access.js';
import { M } from '../messages.js';
import { PM } from '../../partner-portal/messages.js';

/** One answer of a refusal: the status and message the spec fixes; `code` puts it in the typed envelope. */
export interface Answer {
  status: 401 | 403 | 404;
  message: string;
  code?: string;
}

/** Why a presented credential is refused: no usable header, an empty token, or no match. */
export interface CredentialAnswers {
  /** No Authorization header, or one the credential's form does not allow. */
  malformed: Answer;
  /** The header names the scheme but the token is empty. */
  missing: Answer;
  /** The token matches nothing (wrong, replaced, expired). */
  invalid: Answer;
  /** The token is valid but its user no longer exists (account login tokens); `invalid` when absent. */
  unknownUser?: Answer;
}

/** Why a known principal is refused a program or workspace. */
export interface AccessAnswers {
  unknownProgram: Answer;
  notMember: Answer;
  missingPermission: (permission: Permission) => Answer;
}

export interface Requirement {
  credential: CredentialKind;
  /** No credential at all is an anonymous call (click, browser-mode lead), not a refusal. */
  anonymous: boolean;
  refuse: CredentialAnswers & Partial<AccessAnswers> & {
    /** The account belongs to no workspace it could act in (CLI `init`). */
    noWorkspace?: Answer;
  };
}

const answer = (status: Answer['status'], message: string, code?: string): Answer => (code ? { status, message, code } : { status, message });
const same = (a: Answer): CredentialAnswers => ({ malformed: a, missing: a, invalid: a });
const keyAnswers = (m: { malformed: string; missing: string; invalid: string }): CredentialAnswers => ({
  malformed: answer(401, m.malformed),
  missing: answer(401, m.missing),
  invalid: answer(401, m.invalid),
});

const accountAnswers = (userNotFound: string): CredentialAnswers => ({
  malformed: answer(401, M.cli.account.malformed),
  missing: answer(401, M.cli.account.malformed),
  invalid: answer(401, M.cli.account.invalid),
  unknownUser: answer(401, userNotFound),
});
const same403 = (message: string): AccessAnswers => ({
  unknownProgram: answer(403, message),
  notMember: answer(403, message),
  missingPermission: () => answer(403, message),
});

/** What a member who is not an owner is told, per owner-only permission of the management routes. */
const OWNER_ONLY: Partial<Record<Permission, string>> = {
  'api_key:manage': M.management.ownerOnly,
  'processor:manage': M.processor.ownerOnly,
  'terms:write': M.management.termsOwnerOnly,
  'team:manage': M.team.ownerOnly,
  'webhooks:manage': M.webhooks.ownerOnly,
  'money:write': M.money.ownerOnly,
  'partners:manage': PM.decision.ownerOnly,
  'fx_rates:write': M.fx.ownerOnly,
};

/**
 * Every route family's credential and its refusals, per the spec's rules: the one place where
 * 401, 403 or 404 is chosen. Routes name their family; a retired program key is 401
 * api_key_rotation_required everywhere (see program-key.ts).
 */
export const REQUIREMENTS = {
  // Authentication rule 7 and "401 on Bearer-key endpoints": the three messages per surface.
  click: { credential: 'programKey', anonymous: true, refuse: keyAnswers(M.auth) },
  lead: { credential: 'programKey', anonymous: true, refuse: keyAnswers(M.auth) },
  sale: { credential: 'programKey', anonymous: false, refuse: keyAnswers(M.auth) },
  // Refund answers an empty token with `Invalid API token`.
  refund: { credential: 'programKey', anonymous: false, refuse: keyAnswers({ ...M.auth, missing: M.auth.invalid }) },
  // Readiness: the same checks in the typed envelope, code invalid_key, messages ending with a period.
  readiness: {
    credential: 'programKey',
    anonymous: false,
    refuse: {
      malformed: answer(401, M.readiness.malformed, 'invalid_key'),
      missing: answer(401, M.readiness.missing, 'invalid_key'),
      invalid: answer(401, M.readiness.invalid, 'invalid_key'),
    },
  },
  // Management (ours): 401 without a session; a non-member and an unknown program get the same
  // 403, so program ids cannot be probed; a member who is not owner is told who may.
  management: {
    credential: 'session',
    anonymous: false,
    refuse: {
      ...same(answer(401, M.management.sessionRequired)),
      unknownProgram: answer(403, M.management.forbidden),
      notMember: answer(403, M.management.forbidden),
      missingPermission: (permission) => answer(403, OWNER_ONLY[permission] ?? M.management.forbidden),
    },
  },
  // The workspace's team (issue 33, ours): a dashboard session; a workspace the user is not a
  // member of (or that does not exist) is 403 like a stranger's program; members read the team,
  // owners change it.
  team: {
    credential: 'session',
    anonymous: false,
    refuse: {
      ...same(answer(401, M.management.sessionRequired)),
      unknownProgram: answer(403, M.team.notMember),
      notMember: answer(403, M.team.notMember),
      missingPermission: () => answer(403, M.team.ownerOnly),
    },
  },
  // Authentication rule 6: performance answers 403 (not 401) without a session, to a non-member
  // and for an unknown program.
  performance: {
    credential: 'session',
    anonymous: false,
    refuse: {
      ...same(answer(403, M.dashboard.sessionRequired)),
      unknownProgram: answer(403, M.dashboard.notMember),
      notMember: answer(403, M.dashboard.notMember),
      missingPermission: () => answer(403, M.dashboard.notMember),
    },
  },
  // Status: 401 without a session, 404 for an unknown program, 403 without tracking:read.
  status: {
    credential: 'session',
    anonymous: false,
    refuse: {
      ...same(answer(401, M.dashboard.sessionRequired)),
      unknownProgram: answer(404, M.dashboard.programNotFound),
      notMember: answer(403, M.dashboard.trackingReadRequired),
      missingPermission: () => answer(403, M.dashboard.trackingReadRequired),
    },
  },
  // CLI with an account login token (issue 16): every 401 tells the caller to log in again;
  // `programs` answers a vanished user with the spec's bare `User not found`. The advertiser of
  // `init` is a workspace: a workspace the account does not belong to is "does not match".
  cliInit: {
    credential: 'account',
    anonymous: false,
    refuse: {
      ...accountAnswers(M.cli.account.userNotFound),
      ...same403(M.cli.advertiserMismatch),
      noWorkspace: answer(403, M.cli.noAdvertiser),
    },
  },
  cliPrograms: { credential: 'account', anonymous: false, refuse: accountAnswers(M.cli.account.programsUserNotFound) },
  // svc payouts (issue 34): one program with the account token; a program the account's
  // advertisers do not hold is 404 like an unknown one (members and owners read).
  cliProgram: {
    credential: 'account',
    anonymous: false,
    refuse: {
      ...accountAnswers(M.cli.account.userNotFound),
      unknownProgram: answer(404, M.cli.programNotFound),
      notMember: answer(404, M.cli.programNotFound),
      missingPermission: () => answer(404, M.cli.programNotFound),
    },
  },
  // CLI with a program key (status, test-event): `<api_token>` in the malformed-header message,
  // and an invalid key is told how a workspace owner replaces it.
  cliProgramKey: { credential: 'programKey', anonymous: false, refuse: keyAnswers(M.cli.key) },
  // Agent API (issue 13, ours): only an agt_ key authenticates it, so a program key is 401 like any
  // unknown token (and an agent key is 401 on every program-key family above: their lookup is by
  // program-key hash only). A program of another workspace is 404 exactly like an unknown one, so
  // ids cannot be probed; a known program without the scope is 403 naming the scope.
  agent: {
    credential: 'agentKey',
    anonymous: false,
    refuse: {
      ...keyAnswers(M.agent),
      unknownProgram: answer(404, M.agent.programNotFound),
      notMember: answer(404, M.agent.programNotFound),
      missingPermission: (permission) => answer(403, M.agent.missingScope(permission)),
    },
  },
} as const satisfies Record<string, Requirement>;

export type Family = keyof typeof REQUIREMENTS;
/** Families whose routes act on a program or workspace, so a permission can be asked of them. */
export type GuardedFamily = { [F in Family]: (typeof REQUIREMENTS)[F]['refuse'] extends AccessAnswers ? F : never }[Family];
export type ProgramKeyFamily = { [F in Family]: (typeof REQUIREMENTS)[F]['credential'] extends 'programKey' ? F : never }[Family];
