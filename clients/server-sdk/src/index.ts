export { Svc, type RenewalResult } from './client.js';
export { renewalSale, type RenewalDecision, type RenewalSkipReason } from './renewals.js';
export type * from './types.js';
