export type CommissionType = 'percent' | 'fixed' | 'recurring_percent' | 'recurring_fixed';

/** How a commission is computed: commission_cents (schemas/postgres/functions/commission_cents.sql). */
export const COMMISSION_TYPES: readonly CommissionType[] = ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'];
