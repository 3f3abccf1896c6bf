export type CommissionType = 'percent' | 'fixed' | 'recurring_percent' | 'recurring_fixed';

export const COMMISSION_TYPES: readonly CommissionType[] = ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'];

/**
 * The commission a paid sale earns, in the sale's minor units, or null when it earns none:
 * one-off types pay on the payment that converts the customer, recurring types on every payment.
 * Percent rates are percentages of the amount; fixed rates are major units (x100 minor units).
 */
export function commissionCents(type: CommissionType, rate: number, amountCents: number, converts: boolean): number | null {
  const recurring = type === 'recurring_percent' || type === 'recurring_fixed';
  if (!converts && !recurring) return null;
  if (type === 'percent' || type === 'recurring_percent') return Math.round((amountCents * rate) / 100);
  return Math.round(rate * 100);
}

/** The platform's fee on a commission, in basis points of the commission. */
export function platformFeeCents(commission: number, feeBps: number): number {
  return Math.round((commission * feeBps) / 10_000);
}
