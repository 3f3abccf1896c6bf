import type { Refusal, RefusalReason } from '../domain/errors.js';
import { ApiError, badRequest, forbidden, notFound, typedError } from './api-error.js';
import { M, SALE_CODE_BY_STATUS } from './messages.js';

type RefusalAnswers = { [R in RefusalReason]: (refusal: Extract<Refusal, { reason: R }>) => ApiError };

/** What an API surface answers differently from the others. */
interface SurfaceRules {
  /** The answer when something unexpected fails (nothing internal is shown). */
  failed: () => ApiError;
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
  customer_not_found: () => badRequest(M.lead.customerNotFound),
  customer_other_program: () => badRequest(M.lead.otherProgram),
  status_locked: (r) => badRequest(M.lead.statusLocked(r.status)),
  customer_key_taken: () => badRequest(M.lead.customerKeyTaken),
  duplicate_transaction: (r) => new ApiError(409, M.sale.duplicate, { details: { sale_id: r.saleId } }),
  no_junction: () => badRequest(M.sale.noJunction, 'no_attribution'),
  outside_window: () => badRequest(M.sale.outsideWindow, 'no_attribution'),
  partner_required: () => badRequest(M.sale.partnerIdRequired, 'no_attribution'),
  commission_failed: () => new ApiError(500, M.sale.commissionFailed),
  sale_not_found: () => notFound(M.refund.saleNotFound),
};

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
  performance: platform(M.dashboard.performanceFailed),
  status: platform(M.dashboard.statusFailed),
  /** GET /js/svc-tracker.js, the browser tracker. */
  trackerScript: platform(M.management.failed),
  // Agent API (issue 13): a link is named in the path, so an unknown one is 404 like the program.
  agent: platform(M.agent.failed, {
    refusals: {
      link_not_found: () => notFound(M.agent.linkNotFound),
      aff_code_taken: () => new ApiError(409, M.agent.affCodeTaken),
    },
  }),
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

export const failedAnswer = (surface: Surface): ApiError => SURFACES[surface].failed();

/** The error.code the platform envelope of this surface carries for a status, if any. */
export const platformCode = (surface: Surface, status: number): string | undefined => {
  const rules: SurfaceRules = SURFACES[surface];
  return rules.codeByStatus?.[status];
};
