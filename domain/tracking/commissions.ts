export type CommissionType = 'percent' | 'fixed' | 'recurring_percent' | 'recurring_fixed';

/** How a commission is computed: schemas/postgres/0012_record_sale.sql, commission_cents. */
export const COMMISSION_TYPES: readonly CommissionType[] = ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'];
