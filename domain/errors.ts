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
  // A partner's links and promo codes (issue 31): linkNotFound in the management surface's words
  | { reason: 'partner_link_not_found' }
  | { reason: 'promo_code_taken'; code: string }
  | { reason: 'promotion_id_taken'; promotionId: string }
  | { reason: 'promo_code_not_found' }
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
  // Console sign-in and team (issue 33)
  | { reason: 'sign_in_verifier_mismatch' }
  | { reason: 'sign_in_code_refused'; detail: string }
  | { reason: 'no_workspace' }
  | { reason: 'already_member' }
  | { reason: 'invite_not_found' }
  | { reason: 'invite_email_mismatch' }
  | { reason: 'member_not_found' }
  | { reason: 'last_owner' }
  | { reason: 'partner_not_found' }
  // Outgoing webhooks (issue 32): a URL that is not https, or whose host is (or resolves to) a refused address
  | { reason: 'webhook_url_refused'; why: 'not_https' }
  | { reason: 'webhook_url_refused'; why: 'address'; host: string; address: string; addressClass: string }
  | { reason: 'webhook_endpoint_not_found' }
  | { reason: 'webhook_delivery_not_found' }
  | { reason: 'webhook_endpoint_disabled' }
  // Commissions, the ledger and payouts (issue 34); partner_not_found above is theirs too
  | { reason: 'commission_not_found' }
  | { reason: 'commission_state_conflict'; state: string; decision: 'approve' | 'reject' }
  | { reason: 'payout_not_found' }
  | { reason: 'payout_state_conflict'; status: string }
  | { reason: 'currency_without_balance'; currency: string }
  | { reason: 'idempotency_key_reused' }
  // Commission rule versions and partner groups (issue 30)
  | { reason: 'rule_version_in_past' }
  | { reason: 'rule_version_overlaps'; latest: string }
  | { reason: 'group_not_found' }
  | { reason: 'group_not_empty' }
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
