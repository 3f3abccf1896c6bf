import { sql, type Queryable } from '../../core/db.js';

/**
 * A customer row as the processor's partner resolution reads it, locked by the reads below (the
 * tracking routes go through record_sale and record_lead instead).
 */
export interface CustomerRow {
  id: number;
  program_id: number;
  click_id: string | null;
  partner_id: number | null;
  partner_program_id: number | null;
  customer_key: string | null;
  status: 'lead' | 'conversion';
  provisional: boolean;
  test: boolean;
  signup_date: Date | null;
  first_purchase_date: Date | null;
  version: number;
  updated_at: Date;
  click_created_at: Date | null;
}

export interface ClickForCustomer {
  click_id: string;
  program_id: number;
  partner_id: number | null;
  partner_program_id: number | null;
  test: boolean;
  created_at: Date;
  lead_auth: 'server_required' | 'browser_allowed';
  allowed_origins: string[];
  attribution_window_days: number;
}

const CUSTOMER_COLUMNS = `c.id, c.program_id, c.click_id, c.partner_id, c.partner_program_id, c.customer_key, c.status,
  c.provisional, c.test, c.signup_date, c.first_purchase_date, c.version, c.updated_at, k.created_at AS click_created_at`;

const q = {
  byKey: sql(
    'customers.by_key_for_update',
    `SELECT ${CUSTOMER_COLUMNS} FROM customers c LEFT JOIN clicks k ON k.click_id = c.click_id
      WHERE c.program_id = $1 AND c.customer_key = $2 FOR UPDATE OF c`,
  ),
  byClick: sql(
    'customers.by_click_for_update',
    `SELECT ${CUSTOMER_COLUMNS} FROM customers c LEFT JOIN clicks k ON k.click_id = c.click_id
      WHERE c.click_id = $1 FOR UPDATE OF c`,
  ),
  // Locking the click serializes concurrent first leads or sales for one click.
  click: sql(
    'clicks.for_customer',
    `SELECT k.click_id, k.program_id, k.partner_id, k.partner_program_id, k.test, k.created_at,
            p.lead_auth, p.allowed_origins, p.attribution_window_days
       FROM clicks k JOIN programs p ON p.id = k.program_id
      WHERE k.click_id = $1 FOR UPDATE OF k`,
  ),
  update: sql(
    'customers.update',
    `UPDATE customers
        SET status = $2, provisional = $3, customer_key = COALESCE($4, customer_key), email = COALESCE($5, email),
            first_purchase_date = $6, version = version + 1, updated_at = now()
      WHERE id = $1
      RETURNING id, program_id, click_id, partner_id, partner_program_id, customer_key, status, provisional, test,
                signup_date, first_purchase_date, version, updated_at`,
  ),
};

export const lockCustomerByKey = (tx: Queryable, programId: number, customerKey: string) =>
  tx.one<CustomerRow>(q.byKey, [programId, customerKey]);

export const lockCustomerByClick = (tx: Queryable, clickId: string) => tx.one<CustomerRow>(q.byClick, [clickId]);

export const lockClick = (tx: Queryable, clickId: string) => tx.one<ClickForCustomer>(q.click, [clickId]);

export interface CustomerChange {
  status: 'lead' | 'conversion';
  provisional: boolean;
  customerKey?: string | null;
  email?: string | null;
  firstPurchaseDate: Date | null;
}

export async function updateCustomer(tx: Queryable, current: CustomerRow, change: CustomerChange): Promise<CustomerRow> {
  const row = await tx.one<CustomerRow>(q.update, [
    current.id,
    change.status,
    change.provisional,
    change.customerKey ?? null,
    change.email ?? null,
    change.firstPurchaseDate?.toISOString() ?? null,
  ]);
  return { ...row!, click_created_at: current.click_created_at };
}
