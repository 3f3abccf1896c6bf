/** The currencies a sale may be recorded in (spec: USD, EUR, VND). */
export const CURRENCIES = ['USD', 'EUR', 'VND'] as const;
export type Currency = (typeof CURRENCIES)[number];

/** The allowed `provider` values: the spec leaves the list open (docs/decisions/tracking.md, "Sale"). */
export const PROVIDERS = ['processor', 'paddle', 'paypal', 'chargebee', 'braintree', 'adyen', 'manual', 'other'] as const;
