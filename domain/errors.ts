/**
 * Why the domain refused a request, in the domain's words. The domain knows nothing of HTTP:
 * ingest/http/surfaces.ts decides, per API surface, the status, envelope, code and message of
 * each refusal, so a webhook or the CLI can answer the same refusal in its own way.
 */
export type Refusal =
  // Clicks and referral links
  | { reason: 'link_not_found' }
  | { reason: 'link_misconfigured' }
  | { reason: 'link_disabled' }
  | { reason: 'aff_code_taken' }
  | { reason: 'origin_not_allowed' }
  // Customers (lead and sale)
  | { reason: 'customer_not_found' }
  | { reason: 'customer_other_program' }
  | { reason: 'status_locked'; status: string }
  | { reason: 'customer_key_taken' }
  // Sales and refunds
  // saleId null: the transaction_id belongs to a real sale of another program, which is not named.
  | { reason: 'duplicate_transaction'; saleId: string | null }
  | { reason: 'no_junction' }
  | { reason: 'outside_window' }
  | { reason: 'partner_required' }
  | { reason: 'commission_failed' }
  | { reason: 'sale_not_found' }
  // CLI browser login (issue 16)
  | { reason: 'login_session_not_found' }
  | { reason: 'login_session_expired' }
  | { reason: 'login_session_consumed' }
  | { reason: 'id_token_invalid'; detail: string }
  | { reason: 'account_suspended' }
  // CLI synthetic events (issue 16): the 10-chains-per-program-per-hour cap
  | { reason: 'chain_rate_limited'; retryAfterSeconds: number };

export type RefusalReason = Refusal['reason'];

/** Thrown where a refusal must undo the work so far (inside a transaction, or a click batch). */
export class DomainError extends Error {
  readonly refusal: Refusal;
  constructor(refusal: Refusal) {
    super(refusal.reason);
    this.name = 'DomainError';
    this.refusal = refusal;
  }
}

export const refused = (refusal: Refusal) => new DomainError(refusal);
