import { PROVIDERS } from '../../domain/payments/providers.js';

/**
 * Every message the interface spec fixes, word for word, and the few the spec leaves open
 * (marked "ours", recorded in docs/decisions/README.md). Handlers never spell a message themselves.
 */

export const M = {
  click: {
    urlRequired: 'affiliate_url is required',
    urlInvalid: 'Invalid affiliate_url',
    noAff: 'No aff parameter found in affiliate_url',
    linkNotFound: 'Referral link not found',
    linkMisconfigured: 'Invalid referral link configuration',
    linkDisabled: 'This referral link is disabled', // ours
    linkDisabledHint: 'The partner or the brand turned this referral link off. No click was recorded.', // ours
    failed: 'Click tracking failed',
  },
  lead: {
    idRequired: 'click_id or customer_key is required',
    customerNotFound: 'Customer not found. Provide a valid click_id or customer_key.',
    otherProgram: 'Customer does not belong to this program',
    statusLocked: (status: string) => `Customer status cannot be updated to lead. Current status: ${status}`,
    customerKeyTaken: 'customer_key is already used by another customer in this program', // ours
    email: 'email must be a string of 1 to 320 characters', // ours
    failed: 'Lead tracking failed',
  },
  sale: {
    transactionId: 'transaction_id is required and must be a string',
    amount: 'amount_cents is required and must be a positive integer',
    amountAtMost: (max: number) => `amount_cents must be at most ${max}`, // ours
    occurredAt: 'occurred_at must be an ISO 8601 time within the last 30 days',
    provider: `provider must be one of: ${PROVIDERS.join(', ')}`,
    providerPaymentId: 'provider_payment_id must be a string of 1 to 255 characters',
    livemode: 'livemode must be a boolean',
    isRecurring: 'is_recurring must be a boolean', // ours
    saleType: 'sale_type must be a string of 1 to 64 characters', // ours
    subscriptionId: 'subscription_id must be a string of 1 to 255 characters', // ours
    promoCode: 'additional_data.promo_code must be a string of 1 to 64 characters', // ours (issue 31)
    currency: (value: string) => `currency ${value} is not supported`,
    customerNotFound: 'Customer not found. Provide customer_key or click_id.',
    otherProgram: 'No affiliate attribution found for this customer in this program',
    noJunction: 'No partner-program relationship found for this customer',
    partnerIdRequired: 'partnerId required to create commission',
    outsideWindow: 'Click is older than the attribution window for this customer; sale not attributed', // ours
    duplicate: 'Duplicate transaction_id. This sale has already been recorded.',
    commissionFailed: 'Failed to create commission',
    failed: 'Sale tracking failed',
  },
  refund: {
    transactionId: 'transaction_id is required',
    reason: 'reason must be refund or chargeback',
    refundReason: 'refund_reason must be a string of at most 1000 characters', // ours
    saleNotFound: 'Sale not found for transaction_id',
    failed: 'Refund tracking failed',
  },
  programIdMismatch: 'program_id does not match the API key',
  auth: {
    malformed: 'Missing or malformed Authorization header. Expected: Bearer <token>',
    missing: 'Missing API token',
    invalid: 'Invalid API token',
  },
  readiness: {
    malformed: 'Missing or malformed Authorization header. Expected: Bearer <api_token>.',
    missing: 'Missing API token.',
    invalid: 'Invalid API token.',
    failed: 'Failed to compute readiness. Retry shortly.',
    retryAfterSeconds: 10,
  },
  rotation: {
    code: 'api_key_rotation_required',
    warning: (rotateBy: string) =>
      `This API key is scheduled for rotation and stops working at ${rotateBy}.`, // ours
    retired: 'This API key was retired after its rotation deadline.', // ours
    hint: 'A workspace owner can regenerate the key in the dashboard program settings, then update your server.', // ours
  },
  rateLimited: 'Too many requests. Retry after the time given in Retry-After.', // ours
  authThrottled:
    'Too many requests with an invalid key or token from this address. Check the credential, then retry after the time given in Retry-After.', // ours
  body: {
    notObject: 'Request body must be a JSON object', // ours
    invalidJson: 'Request body is not valid JSON', // ours
    tooLarge: 'Request body is too large', // ours
    mediaType: 'Content-Type must be application/json', // ours
    badUrl: 'The request URL is not valid', // ours
    badRequest: 'Bad request', // ours
    /** click_id and customer_key, on lead and sale. */
    identifier: (name: string) => `${name} must be a string of 1 to 255 characters`,
    additionalData: 'additional_data must be an object', // ours
    testMode: 'additional_data.test_mode must be a boolean', // ours
    programId: 'additional_data.program_id must be a positive integer', // ours
    programIdParam: 'programId must be a positive integer', // ours
    unknownField: (keys: string[]) => `Unknown field${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}`, // ours
  },
  origin: {
    notAllowed: 'Origin is not on the allowed-origin list of this program', // ours
  },
  processor: {
    signature: 'Invalid processor signature', // ours
    body: 'The event body is not a processor event', // ours
    failed: 'Processor event processing failed', // ours
    accountId: 'account_id must be a processor account id (acct_...)', // ours
    notConnected: 'This program has no processor connection', // ours
    limit: 'limit must be an integer from 1 to 100', // ours
    ownerOnly: 'Only a workspace owner can connect or disconnect the payment processor', // ours
    // Issue 27: an event no store could keep, an account's own URL, who owns an account.
    text: 'The event carries text that cannot be stored (a NUL character or an unpaired surrogate)', // ours
    created: 'The event created time must be whole unix seconds from 2000-01-01 to 2100-01-01', // ours
    otherAccount: "The event's account is not the account of this webhook URL", // ours
    webhookSecret: "webhook_secret must be the signing secret of the account's webhook endpoint (whsec_...)", // ours
    accountTaken: 'This processor account is connected to another workspace', // ours
    noSecretsKey: 'Processor connections are unavailable: the service has no SECRETS_KEY', // ours
  },
  management: {
    sessionRequired: 'A dashboard session is required', // ours
    forbidden: 'You are not a member of the workspace that owns this program', // ours
    ownerOnly: 'Only a workspace owner can generate or regenerate the API key', // ours
    linkNotFound: 'Referral link not found', // ours, same words as the click's
    affCodeTaken: 'aff_code is already in use', // ours
    workspaceRequired: 'workspace_id is required when you belong to several workspaces', // ours
    failed: 'Internal server error', // ours
    // The next three are the spec's CLI `init` messages, which program creation shares.
    missingFields: 'Missing required fields: name, domain, commission_type, commission_rate',
    commissionType: (value: string, valid: readonly string[]) => `Invalid commission_type: ${value}. Valid: ${valid.join(', ')}`,
    commissionRate: 'commission_rate must be a positive number',
    commissionRateMax: 'commission_rate must be at most 1000000', // ours
    percentRateMax: 'commission_rate must be at most 100 for percent commissions', // ours
    attributionWindow: 'attribution_window_days must be an integer from 1 to 3650', // ours
    workspaceId: 'workspace_id must be a positive integer', // ours
    allowedOrigins: 'allowed_origins must be a list of at most 50 origins such as https://shop.example.com', // ours
    leadAuth: 'lead_auth must be server_required or browser_allowed', // ours
    paymentTrackingMode: 'paymentTrackingMode must be processor_connect or s2s', // ours
    text: (name: string, max: number) => `${name} must be a string of 1 to ${max} characters`, // ours
    domain: 'domain must be a host name such as shop.example.com (no scheme, port or path)', // ours
    partnerName: 'name is required and must be a string of 1 to 200 characters', // ours
    email: 'email must be a valid email address', // ours
    affCode: 'aff_code must be 3 to 64 letters, digits, dashes or underscores', // ours
    linkCode: 'affCode must be a referral link code of 1 to 64 characters', // ours
    enabled: 'enabled is required and must be a boolean', // ours
    // Issue 33: the console's program settings, partner list and allowed origins.
    termsOwnerOnly: 'Only a workspace owner can change the commission terms (commission_type, commission_rate, recurring_months) and partner groups', // ours
    origin: 'origin must be an origin such as https://shop.example.com (scheme, host and port only)', // ours
    originLimit: 'A program allows at most 50 origins: remove one first', // ours
    originNotListed: "This origin is not among the program's allowed origins", // ours
    search: 'search must be a string of at most 100 characters', // ours
    partnerLimit: 'limit must be an integer from 1 to 500', // ours
    partnerId: 'partnerId must be a positive integer', // ours
    partnerNotFound: 'Partner not found in this program', // ours
    applicationsOpen: 'applications_open must be a boolean', // ours (issue 31)
    partnerStatus: 'status must be one of: pending, approved, rejected, banned, removed', // ours
    // Issue 30: the converted totals' currency.
    reportingCurrency: 'reporting_currency must be an ISO 4217 currency code such as USD, EUR or VND', // ours
  },
  /** Issue 30 (ours): a workspace's exchange rates, POST /api/tracking/fx-rates. */
  fx: {
    ownerOnly: 'Only a workspace owner can load exchange rates', // ours
    csv: 'csv is required: the rates file as text (Date,USD,JPY,... then one line per day)', // ours
    refused: (first: string) => `The rates file was refused, nothing was stored: ${first}`, // ours
  },
  /** A partner's links and promo codes, and the sub-id report (issue 31, points 3 and 4, ours). */
  links: {
    linkId: 'linkId must be a positive integer', // ours
    linkNotFound: 'Referral link not found for this partner', // ours
    promoCodeId: 'promoCodeId must be a positive integer', // ours
    code: 'code must be 2 to 64 letters, digits, dashes or underscores', // ours
    promotionId: 'processor_promotion_id must be 1 to 255 letters, digits, dashes or underscores', // ours
    codeTaken: (code: string) => `Promo code ${code} is already in use in this program (codes are unique ignoring case)`, // ours
    promotionIdTaken: (id: string) => `processor_promotion_id ${id} already belongs to another promo code of this program`, // ours
    promoCodeNotFound: 'Promo code not found for this partner', // ours
    sub: 'sub must be an integer from 1 to 5', // ours
    range: 'from and to must be dates (YYYY-MM-DD), from not after to, at most 366 days apart', // ours
    partnerFilter: 'partner_id must be a positive integer', // ours
    warehouse: 'The warehouse is not available: sub-id figures cannot be read', // ours
  },
  /** The console's sign-in (issue 33, ours): POST /api/tracking/session/sign-in and POST /api/tracking/session. */
  console: {
    codeChallenge: 'code_challenge must be the S256 challenge of a PKCE verifier (43 base64url characters)', // ours
    state: 'state must be the state of a sign-in started by POST /api/tracking/session/sign-in', // ours
    code: 'code must be the authorization code the identity provider returned', // ours
    codeVerifier: 'code_verifier must be the PKCE verifier of 43 to 128 characters this browser made', // ours
    signInNotFound: 'This sign-in has expired or was already used. Sign in again.', // ours
    signInExpired: 'This sign-in took more than 10 minutes. Sign in again.', // ours
    verifierMismatch: 'This sign-in was started in another browser or tab. Sign in again from here.', // ours
    codeRefused: (detail: string) => `The identity provider refused the sign-in: ${detail}`, // ours
    noWorkspace: 'This account is not a member of any workspace. Ask a workspace owner to invite you, then sign in again.', // ours
    noProvider: 'Sign-in is not configured on this server: set OIDC_ISSUER (or sign in with a session token from npm run ops)', // ours
    providerUnreachable: 'The sign-in provider cannot be reached right now. Try again in a moment.', // ours
    failed: 'Sign-in failed', // ours
  },
  /** The workspace's team (issue 33, ours). */
  team: {
    workspaceId: 'workspaceId must be a positive integer', // ours
    userId: 'userId must be a positive integer', // ours
    inviteId: 'inviteId must be a positive integer', // ours
    email: 'email is required and must be a valid email address', // ours
    role: 'role is required and must be owner or member', // ours
    token: 'token must be the invite token of an invite link (inv_...)', // ours
    notMember: 'You are not a member of this workspace', // ours
    ownerOnly: 'Only a workspace owner can invite people, change roles or remove members', // ours
    alreadyMember: 'This person is already a member of the workspace', // ours
    inviteGone: 'This invite has expired, was revoked or was already used. Ask a workspace owner for a new one.', // ours
    inviteEmail: 'This invite was sent to another email address: sign in with the address it was sent to', // ours
    memberNotFound: 'Member not found', // ours
    lastOwner: 'A workspace keeps at least one owner: make another member an owner first', // ours
  },
  /** The spec's "CLI error messages"; "ours" where it gives only the sense (docs/decisions/cli.md "CLI (issue 16)"). */
  cli: {
    startFailed: (requestId: string) => `Failed to start auth session (request_id: ${requestId})`,
    callbackMissing: 'Missing required fields: state, id_token',
    callbackNotFound: 'Session not found or already used',
    sessionExpired: 'Session expired',
    suspended: 'Your account has been suspended.',
    suspendedCode: 'ACCOUNT_BLOCKED',
    idTokenInvalid: (detail: string) => `Invalid id_token: ${detail}`, // ours
    callbackFailed: (requestId: string) => `Auth callback failed (request_id: ${requestId})`,
    pollMissingState: 'Missing state parameter',
    pollNotFound: 'Session not found',
    pollConsumed: 'Session already consumed',
    pollFailed: (requestId: string) => `Failed to poll auth session (request_id: ${requestId})`,
    // Account login token (init, programs): each 401 tells the caller to log in again.
    account: {
      malformed: 'Missing or malformed Authorization header. Run `svc login` to log in again.', // ours
      invalid: 'Invalid or expired login token. Run `svc login` to log in again.', // ours
      userNotFound: 'User not found. Run `svc login` to log in again.', // ours (init)
      programsUserNotFound: 'User not found',
    },
    noAdvertiser:
      'No advertiser account is linked to this login. Ask a workspace owner to invite you, then run `svc login` again.', // ours
    advertiserMismatch: 'advertiser_id does not match the authenticated account',
    advertiserId: 'advertiser_id must be a positive integer', // ours
    advertiserRequired: 'advertiser_id is required when your account belongs to several advertisers', // ours
    initFailed: (requestId: string) => `Failed to create program (request_id: ${requestId})`,
    programsFailed: (requestId: string) => `Failed to list programs (request_id: ${requestId})`,
    // svc payouts (issue 34, ours): a program of the account's advertisers, read with the account token.
    programNotFound: 'Program not found among the programs of your advertisers', // ours
    payoutsFailed: (requestId: string) => `Failed to list payouts (request_id: ${requestId})`, // ours
    statusFailed: (requestId: string) => `Failed to get status (request_id: ${requestId})`,
    // Program key (status, test-event).
    key: {
      malformed: 'Missing or malformed Authorization header. Expected: Bearer <api_token>',
      missing: 'Missing API token',
      invalid:
        'Invalid API key. It may have been regenerated: a workspace owner can regenerate the key in the dashboard program settings and give you the new one.', // ours beyond "Invalid API key"
    },
    eventType: (value: string) => `Invalid event_type: ${value}. Valid: click, lead, sale`,
    chainType: (value: string) => `Invalid type: ${value}. Valid: chain`, // ours
    eventAndChain: 'Send either event_type or type: chain, not both', // ours
    chainRateLimited: 'Too many synthetic chains (max 10/program/hour).',
    chainFailed: (requestId: string) => `Failed to run synthetic chain (request_id: ${requestId})`,
    eventFailed: (requestId: string) => `Failed to process test event (request_id: ${requestId})`,
    processorConnectGone:
      'This endpoint is retired. Connect the payment processor from the dashboard: program settings, payments.', // ours
    loginPageGone: 'This login link has expired or was already used. Run `svc login` again.', // ours
    providerUnreachable: 'The sign-in provider cannot be reached right now. Reload this page in a moment.', // ours
  },
  notFound: 'Route not found', // ours
  /** Outgoing webhooks (issue 32): a program's endpoints, deliveries and their refusals. */
  webhooks: {
    ownerOnly: 'Only a workspace owner can create, change, rotate, test or delete webhook endpoints and redeliver their events', // ours
    url: 'url must be an absolute https URL of at most 2048 characters, without a fragment', // ours
    notHttps: 'url must use https', // ours
    address: (host: string, address: string, addressClass: string) =>
      host === address
        ? `url must not point to a private, loopback, link-local or metadata address: ${address} is ${addressClass}` // ours
        : `url must not point to a private, loopback, link-local or metadata address: ${host} resolves to ${address}, which is ${addressClass}`, // ours
    events: (valid: readonly string[]) => `events must be a non-empty list of distinct event types, each one of: ${valid.join(', ')}`, // ours
    description: 'description must be a string of 1 to 500 characters, or null', // ours
    enabled: 'enabled must be a boolean', // ours
    endpointId: 'endpointId must be a webhook endpoint id', // ours
    deliveryId: 'deliveryId must be a delivery id', // ours
    endpointNotFound: 'Webhook endpoint not found', // ours
    deliveryNotFound: 'Delivery not found', // ours
    endpointDisabled: 'This webhook endpoint is disabled; enable it (PATCH with enabled: true) before redelivering or testing', // ours
    noSecretsKey: 'Webhook endpoints are unavailable: the service has no SECRETS_KEY', // ours
    limit: 'limit must be an integer from 1 to 100', // ours
    status: 'status must be one of: pending, delivered, failed', // ours
  },
  /** The audit log (issue 32, point 6, ours): GET /api/tracking/programs/:programId/audit-log and the agent's read of it. */
  audit: {
    limit: 'limit must be an integer from 1 to 100', // ours
  },
  /** Commissions, the ledger, payouts and statements (issue 34, ours): the money surface under /api/tracking/programs/:programId/. */
  /** Fraud review (issue 31, point 5, ours): the program setting fraud_rules and GET .../reviews. */
  fraud: {
    rules: (names: readonly string[]) => `fraud_rules must be an object of booleans with the rules ${names.join(', ')}`, // ours
    unknownRule: (name: string, names: readonly string[]) => `Unknown fraud rule: ${name}. Valid: ${names.join(', ')}`, // ours
    ruleValue: (name: string) => `fraud_rules.${name} must be true or false`, // ours
  },
  money: {
    ownerOnly: 'Only a workspace owner can move money: approve or reject commissions, adjust balances, change payout settings, create, pay or cancel payouts', // ours
    commissionNotFound: 'Commission not found in this program', // ours
    commissionState: (state: string, decision: 'approve' | 'reject') =>
      `This commission is ${state}: it cannot be ${decision === 'approve' ? 'approved' : 'rejected'}`, // ours
    payoutNotFound: 'Payout not found in this program', // ours
    payoutState: (status: string) => `This payout is ${status}, not pending: it can no longer be marked paid or canceled`, // ours
    currencyWithoutBalance: (currency: string) =>
      `The partner has no ledger entries in ${currency}: a manual adjustment must be in a currency the partner has a balance in`, // ours
    idempotencyKeyReused: 'This Idempotency-Key was already used for another request', // ours
    idempotencyKey: 'Idempotency-Key must be 1 to 255 printable characters', // ours
    reason: 'reason is required and must be a string of 1 to 500 characters', // ours
    amount: 'amount_minor is required and must be a non-zero integer of at most 100000000000 either way', // ours
    currency: (valid: readonly string[]) => `currency is required and must be one of: ${valid.join(', ')}`, // ours
    cutoff: 'cutoff must be an ISO 8601 date-time with an offset, such as 2026-01-31T00:00:00Z', // ours
    futureCutoff: 'cutoff must not be in the future', // ours
    reference: 'reference is required and must be a string of 1 to 200 characters', // ours
    period: 'period must be a month as YYYY-MM (UTC), such as 2026-01', // ours
    futurePeriod: 'period must not be after the current month', // ours
    commissionId: 'commissionId must be a commission id', // ours
    payoutId: 'payoutId must be a payout id', // ours
    partnerId: 'partnerId must be a positive integer', // ours
    status: (valid: readonly string[]) => `status must be one of: ${valid.join(', ')}`, // ours
    format: 'format must be one of: csv, paypal, wise', // ours
    paypalCurrency: 'A PayPal payouts file holds one currency: add currency= (these payouts are in several currencies)', // ours
    limit: 'limit must be an integer from 1 to 100', // ours
    cursor: 'cursor is not valid; pass the next_cursor of a previous page unchanged', // ours
    holdDays: 'commission_hold_days must be an integer from 0 to 365', // ours
    payoutMinimum: 'payout_minimum_minor must be an integer from 1 to 100000000000', // ours
    settingsEmpty: 'Send commission_hold_days, payout_minimum_minor or both', // ours
    method: 'method is required and must be one of: paypal, wise, manual', // ours
    methodEmail: 'email is required and must be a valid email address', // ours
    methodName: "name is required and must be the account holder's name, 1 to 200 characters", // ours
    receiverType: 'receiver_type must be PERSON or INSTITUTION', // ours
    methodNote: 'note must be a string of 1 to 500 characters', // ours
    noMethod: 'This partner has no payout method yet', // ours
  },
  /** Commission rule versions, partner groups and the what-if simulation (issue 30, ours). */
  terms: {
    recurringMonths: 'recurring_months must be an integer from 1 to 120, or null for lifetime', // ours
    recurringMonthsType: 'recurring_months applies only to recurring_percent and recurring_fixed commissions', // ours
    effectiveFrom: 'effective_from must be an ISO 8601 date-time with an offset, such as 2026-12-01T00:00:00Z', // ours
    inPast: 'effective_from must not be in the past: a version never changes commissions already computed', // ours
    overlaps: (latest: string) => `effective_from must be later than the latest version's (${latest}): versions never overlap`, // ours
    termsIncomplete: 'Group terms need commission_type and commission_rate together (recurring_months optional)', // ours
    groupName: 'name is required and must be a string of 1 to 200 characters', // ours
    groupId: 'groupId must be a positive integer', // ours
    groupNotFound: 'Group not found in this program', // ours
    groupNotEmpty: 'This group still has partners: move them to another group or out of it first', // ours
    patchEmpty: 'Send name, terms or both', // ours
    range: 'from and to are required ISO 8601 date-times with an offset, from before to, at most 400 days apart', // ours
    terms: 'terms is required: commission_type, commission_rate and optionally recurring_months', // ours
    warehouseUnavailable: 'The simulation needs the warehouse, which this service has not configured', // ours
  },
  agent: {
    malformed: 'Missing or malformed Authorization header. Expected: Bearer <agent_key>', // ours
    missing: 'Missing agent API key', // ours
    invalid: 'Invalid agent API key', // ours
    programNotFound: 'Program not found', // ours, same words as the status endpoint
    missingScope: (scope: string) => `This agent key does not have the ${scope} scope`, // ours
    linkNotFound: 'Referral link not found', // ours, same words as the click's
    affCodeTaken: 'aff_code is already in use by another partner or program', // ours
    failed: 'Internal server error', // ours
    cursor: 'cursor is not valid; pass the next_cursor of a previous page unchanged', // ours
    limit: 'limit must be an integer from 1 to 100', // ours
    ownerOnly: 'Only a workspace owner can connect or disconnect the payment processor', // ours
    partnerId: 'partner_id must be a positive integer', // ours
    time: (name: string) => `${name} must be an ISO 8601 date-time with an offset, such as 2026-01-31T00:00:00Z`, // ours
    timeOrder: 'from must be before to', // ours
    status: (valid: readonly string[]) => `status must be one of: ${valid.join(', ')}`, // ours
    reference: 'reference must be 1 to 64 letters, digits, dashes, underscores or dots', // ours
    eventType: (value: string) => `Invalid event_type: ${value}. Valid: click, lead, sale`, // the spec's CLI wording
    affCodeRequired: 'aff_code is required and must be 3 to 64 letters, digits, dashes or underscores', // ours
  },
  dashboard: {
    sessionRequired: 'A dashboard session is required', // ours, same words as management
    notMember: 'You are not a member of the workspace that owns this program', // ours, same words as management
    programNotFound: 'Program not found', // ours
    trackingReadRequired: 'You do not have tracking:read permission on this program', // ours
    period: 'period must be one of: 7d, 30d, 90d, all', // ours
    date: (name: 'dateFrom' | 'dateTo') =>
      `${name} must be an ISO 8601 date (YYYY-MM-DD) or date-time between 2000-01-01 and 2099-12-31`, // ours
    datesTogether: 'dateFrom and dateTo must be sent together', // ours
    dateOrder: 'dateFrom must not be after dateTo', // ours
    dateSpan: (maxDays: number) => `dateFrom to dateTo may cover at most ${maxDays} days`, // ours
    unknownQuery: (keys: string[]) => `Unknown query parameter${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}`, // ours
    badQuery: 'The query string is not valid', // ours
    performanceFailed: 'Failed to load performance data', // ours
    statusFailed: 'Failed to load integration status', // ours
  },
} as const;

/** Names of the platform envelope, by status (spec "Envelopes"; 413, 415 and 429 are ours). */
export const ERROR_NAMES: Record<number, string> = {
  400: 'BadRequestError',
  401: 'UnauthorizedError',
  403: 'ForbiddenError',
  404: 'NotFoundError',
  409: 'ConflictError',
  410: 'GoneError',
  413: 'PayloadTooLargeError',
  415: 'UnsupportedMediaTypeError',
  422: 'UnprocessableEntityError',
  429: 'TooManyRequestsError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError', // ours: the console's sign-in when the identity provider cannot be reached
};

/** Sale and refund add error.code to every error of the platform envelope. */
export const SALE_CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  409: 'duplicate_transaction',
  413: 'invalid_request',
  422: 'unsupported_currency',
  500: 'internal_error',
};
