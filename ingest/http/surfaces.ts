import type { Refusal, RefusalReason } from '../../domain/errors.js';
import { ApiError, badRequest, forbidden, notFound, typedError } from './api-error.js';
import { M, SALE_CODE_BY_STATUS } from './messages.js';

type RefusalAnswers = { [R in RefusalReason]: (refusal: Extract<Refusal, { reason: R }>) => ApiError };

/** What is known of a request that failed unexpectedly. */
export interface FailureContext {
  requestId: string;
  body: unknown;
}

/** What an API surface answers differently from the others. */
interface SurfaceRules {
  /** The answer when something unexpected fails (nothing internal is shown). */
  failed: (context: FailureContext) => ApiError;
  /** Platform envelope: the error.code of each status, where the spec gives every error one. */
  codeByStatus?: Readonly<Record<number, string>>;
  /** Domain refusals this surface words otherwise than the usual answer below. */
  refusals?: Partial<RefusalAnswers>;
}

/** The usual answer to each domain refusal; a surface may word one otherwise in its entry. */
const USUAL: RefusalAnswers = {
  link_not_found: () => badRequest(M.click.linkNotFound),
  link_misconfigured: () => badRequest(M.click.linkMisconfigured),
  link_disabled: () =>
    new ApiError(410, M.click.linkDisabled, {
      envelope: 'typed',
      code: 'link_disabled',
      extra: { hint: M.click.linkDisabledHint },
      topLevel: { success: false, message: M.click.linkDisabled },
    }),
  aff_code_taken: () => new ApiError(409, M.management.affCodeTaken),
  origin_not_allowed: () => forbidden(M.origin.notAllowed),
  partner_link_not_found: () => notFound(M.links.linkNotFound),
  promo_code_taken: (r) => new ApiError(409, M.links.codeTaken(r.code), { details: { code: r.code } }),
  promotion_id_taken: (r) => new ApiError(409, M.links.promotionIdTaken(r.promotionId), { details: { processor_promotion_id: r.promotionId } }),
  promo_code_not_found: () => notFound(M.links.promoCodeNotFound),
  customer_not_found: () => badRequest(M.lead.customerNotFound),
  customer_other_program: () => badRequest(M.lead.otherProgram),
  status_locked: (r) => badRequest(M.lead.statusLocked(r.status)),
  customer_key_taken: () => badRequest(M.lead.customerKeyTaken),
  duplicate_transaction: (r) => new ApiError(409, M.sale.duplicate, { details: r.saleId === null ? {} : { sale_id: r.saleId } }),
  no_junction: () => badRequest(M.sale.noJunction, 'no_attribution'),
  outside_window: () => badRequest(M.sale.outsideWindow, 'no_attribution'),
  partner_required: () => badRequest(M.sale.partnerIdRequired, 'no_attribution'),
  commission_failed: () => new ApiError(500, M.sale.commissionFailed),
  sale_not_found: () => notFound(M.refund.saleNotFound),
  login_session_not_found: () => notFound(M.cli.pollNotFound),
  login_session_expired: () => badRequest(M.cli.sessionExpired),
  login_session_consumed: () => badRequest(M.cli.pollConsumed),
  id_token_invalid: (r) => badRequest(M.cli.idTokenInvalid(r.detail)),
  account_suspended: () => new ApiError(403, M.cli.suspended, { details: { code: M.cli.suspendedCode } }),
  sign_in_verifier_mismatch: () => badRequest(M.console.verifierMismatch),
  sign_in_code_refused: (r) => badRequest(M.console.codeRefused(r.detail)),
  no_workspace: () => forbidden(M.console.noWorkspace),
  already_member: () => new ApiError(409, M.team.alreadyMember),
  invite_not_found: () => notFound(M.team.inviteGone),
  invite_email_mismatch: () => forbidden(M.team.inviteEmail),
  member_not_found: () => notFound(M.team.memberNotFound),
  last_owner: () => new ApiError(409, M.team.lastOwner),
  partner_not_found: () => notFound(M.management.partnerNotFound),
  webhook_url_refused: (r) => badRequest(r.why === 'not_https' ? M.webhooks.notHttps : M.webhooks.address(r.host, r.address, r.addressClass)),
  webhook_endpoint_not_found: () => notFound(M.webhooks.endpointNotFound),
  webhook_delivery_not_found: () => notFound(M.webhooks.deliveryNotFound),
  webhook_endpoint_disabled: () => new ApiError(409, M.webhooks.endpointDisabled),
  commission_not_found: () => notFound(M.money.commissionNotFound),
  commission_state_conflict: (r) => new ApiError(409, M.money.commissionState(r.state, r.decision), { details: { status: r.state } }),
  payout_not_found: () => notFound(M.money.payoutNotFound),
  payout_state_conflict: (r) => new ApiError(409, M.money.payoutState(r.status), { details: { status: r.status } }),
  currency_without_balance: (r) => badRequest(M.money.currencyWithoutBalance(r.currency)),
  idempotency_key_reused: () => new ApiError(409, M.money.idempotencyKeyReused),
  rule_version_in_past: () => badRequest(M.terms.inPast),
  rule_version_overlaps: (r) => new ApiError(409, M.terms.overlaps(r.latest), { details: { latest_effective_from: r.latest } }),
  group_not_found: () => notFound(M.terms.groupNotFound),
  group_not_empty: () => new ApiError(409, M.terms.groupNotEmpty),
  chain_rate_limited: (r) =>
    new ApiError(429, M.cli.chainRateLimited, {
      envelope: 'typed',
      code: 'rate_limited',
      extra: { status: 429, retry_after_seconds: r.retryAfterSeconds },
      headers: { 'Retry-After': String(r.retryAfterSeconds) },
    }),
};

/** A CLI surface: its 500 carries the request id at the end of the message and in error.details.request_id. */
const cli = (failed: (requestId: string) => string, rules: Partial<SurfaceRules> = {}): SurfaceRules => ({
  failed: ({ requestId }) => new ApiError(500, failed(requestId), { details: { request_id: requestId } }),
  ...rules,
});
/** The test-event body asks for the chain: as sent (`type`), or as validated (`mode`, TestEventRequest in ingest/cli/schemas.ts). */
const isChain = (body: unknown) =>
  typeof body === 'object' && body !== null && ((body as { type?: unknown }).type === 'chain' || (body as { mode?: unknown }).mode === 'chain');

/** A surface answering in the platform envelope. (Credential refusals are auth/requirements.ts's.) */
const platform = (failed: string, rules: Partial<SurfaceRules> = {}): SurfaceRules => ({
  failed: () => new ApiError(500, failed),
  ...rules,
});

/**
 * Every API surface and what it answers differently. A route names its surface in
 * `config: { surface }` (required: see requireSurface in errors.ts); adding a surface is adding
 * an entry here.
 */
export const SURFACES = {
  click: platform(M.click.failed),
  lead: platform(M.lead.failed),
  sale: platform(M.sale.failed, {
    codeByStatus: SALE_CODE_BY_STATUS,
    refusals: {
      customer_not_found: () => badRequest(M.sale.customerNotFound, 'no_attribution'),
      customer_other_program: () => badRequest(M.sale.otherProgram, 'no_attribution'),
    },
  }),
  refund: platform(M.refund.failed, { codeByStatus: SALE_CODE_BY_STATUS }),
  // Readiness answers every error in the typed envelope.
  readiness: {
    failed: () => typedError(500, 'internal_error', M.readiness.failed, { retry_after_seconds: M.readiness.retryAfterSeconds }),
  },
  management: platform(M.management.failed, {
    refusals: { link_not_found: () => notFound(M.management.linkNotFound) },
  }),
  /** The console's sign-in (issue 33): a spent or unknown sign-in is 404, a late one 400, in the console's words. */
  consoleSignIn: platform(M.console.failed, {
    refusals: {
      login_session_not_found: () => notFound(M.console.signInNotFound),
      login_session_expired: () => badRequest(M.console.signInExpired),
    },
  }),
  /** Commissions, the ledger, payouts and statements (issue 34): platform envelope, refusals as USUAL. */
  money: platform(M.management.failed),
  /** POST /api/v1/webhooks/processor: a 500 makes the processor retry the event. */
  processorWebhook: platform(M.processor.failed),
  performance: platform(M.dashboard.performanceFailed),
  status: platform(M.dashboard.statusFailed),
  // CLI endpoints under /api/v1/cli/ (issue 16).
  cliAuthStart: cli(M.cli.startFailed),
  cliAuthCallback: cli(M.cli.callbackFailed, { refusals: { login_session_not_found: () => notFound(M.cli.callbackNotFound) } }),
  cliAuthPoll: cli(M.cli.pollFailed),
  cliInit: cli(M.cli.initFailed),
  cliPrograms: cli(M.cli.programsFailed),
  cliPayouts: cli(M.cli.payoutsFailed),
  cliStatus: cli(M.cli.statusFailed),
  cliTestEvent: {
    failed: ({ requestId, body }) =>
      new ApiError(500, isChain(body) ? M.cli.chainFailed(requestId) : M.cli.eventFailed(requestId), { details: { request_id: requestId } }),
  },
  cliRetired: platform(M.management.failed),
  /** GET /js/svc-tracker.js, the browser tracker. */
  trackerScript: platform(M.management.failed),
  // Agent API (issue 13): a link is named in the path, so an unknown one is 404 like the program.
  agent: platform(M.agent.failed, {
    refusals: {
      link_not_found: () => notFound(M.agent.linkNotFound),
      aff_code_taken: () => new ApiError(409, M.agent.affCodeTaken),
    },
  }),
  /** The partner program (issue 31): applications, owners' decisions on partners, the portal and /api/partner/v1. */
  partner: platform(M.management.failed),
  /** Pages, health and unknown routes. */
  other: platform(M.management.failed),
} satisfies Record<string, SurfaceRules>;

export type Surface = keyof typeof SURFACES;

export const isSurface = (value: unknown): value is Surface => typeof value === 'string' && Object.hasOwn(SURFACES, value);

/** The answer of a surface to a domain refusal. */
export function refusalAnswer(surface: Surface, refusal: Refusal): ApiError {
  const rules: SurfaceRules = SURFACES[surface];
  // Indexed by the refusal's own reason, so the answer takes that refusal.
  const answer = (rules.refusals?.[refusal.reason] ?? USUAL[refusal.reason]) as (refusal: Refusal) => ApiError;
  return answer(refusal);
}

export const failedAnswer = (surface: Surface, context: FailureContext): ApiError => SURFACES[surface].failed(context);

/** The error.code the platform envelope of this surface carries for a status, if any. */
export const platformCode = (surface: Surface, status: number): string | undefined => {
  const rules: SurfaceRules = SURFACES[surface];
  return rules.codeByStatus?.[status];
};
