import { isUniqueViolation, type Database, type Transaction } from '../../core/db.js';
import {
  insertCustomer,
  lockClick,
  lockCustomerByClick,
  lockCustomerByKey,
  updateCustomer,
  type ClickForCustomer,
  type CustomerRow,
} from './customers.js';
import { customerChanged, type OutboxEvent } from '../../schemas/event-contract.js';
import { refused } from './errors.js';
import { appendEvents } from './outbox.js';
import { logTestEvent } from './test-events.js';

export interface LeadInput {
  clickId: string | undefined;
  customerKey: string | undefined;
  email: string | undefined;
  test: boolean;
  /** Server mode: the program of the API key. Browser mode: undefined. */
  keyProgramId: number | undefined;
  origin: string | undefined;
}

export interface LeadResult {
  customerId: number;
  programId: number;
  clickId: string | null;
  status: 'lead' | 'conversion';
  signupDate: Date | null;
  provisional: boolean;
}

const result = (c: CustomerRow): LeadResult => ({
  customerId: c.id,
  programId: c.program_id,
  clickId: c.click_id,
  status: c.status,
  signupDate: c.signup_date,
  provisional: c.provisional,
});

/**
 * A signup. Server mode (valid key) settles; browser mode on a server_required program leaves a
 * provisional lead whose customer key is not saved. First click wins: an existing customer keeps
 * the partner and program of the click that created it.
 */
export async function recordLead(db: Database, input: LeadInput): Promise<LeadResult> {
  const serverMode = input.keyProgramId !== undefined;
  try {
    return await db.transaction(async (tx) => {
      let customer: CustomerRow | undefined;
      let click: ClickForCustomer | undefined;
      if (serverMode && input.customerKey !== undefined) {
        customer = await lockCustomerByKey(tx, input.keyProgramId!, input.customerKey);
      }
      if (!customer && input.clickId !== undefined) {
        click = await lockClick(tx, input.clickId);
        if (click) customer = await lockCustomerByClick(tx, input.clickId);
      }
      const programId = customer?.program_id ?? click?.program_id;
      if (programId === undefined) throw refused({ reason: 'customer_not_found' });
      if (serverMode && programId !== input.keyProgramId) throw refused({ reason: 'customer_other_program' });
      if (!serverMode && click && input.origin !== undefined && !click.allowed_origins.includes(input.origin)) {
        throw refused({ reason: 'origin_not_allowed' });
      }
      if (customer) return result(await leadForExistingCustomer(tx, customer, input, serverMode));
      return result(await newLead(tx, click!, input, serverMode));
    });
  } catch (error) {
    if (isUniqueViolation(error, 'customers_program_id_customer_key_key')) throw refused({ reason: 'customer_key_taken' });
    throw error;
  }
}

async function leadForExistingCustomer(tx: Transaction, customer: CustomerRow, input: LeadInput, serverMode: boolean) {
  if (!customer.provisional) throw refused({ reason: 'status_locked', status: customer.status });
  const leadAuth = serverMode ? 'server_required' : await programLeadAuth(tx, customer);
  if (!serverMode && leadAuth === 'server_required') return customer; // repeat browser lead: nothing new
  const settled = await updateCustomer(tx, customer, {
    status: customer.status,
    provisional: false,
    customerKey: serverMode ? (input.customerKey ?? null) : null,
    email: serverMode ? (input.email ?? null) : null,
    firstPurchaseDate: customer.first_purchase_date,
  });
  await appendEvents(tx, [customerChanged(settled, 'settled')]);
  return settled;
}

async function programLeadAuth(tx: Transaction, customer: CustomerRow) {
  // The click row carries the program's current lead_auth; a customer always has its click here.
  const click = customer.click_id ? await lockClick(tx, customer.click_id) : undefined;
  return click?.lead_auth ?? 'server_required';
}

async function newLead(tx: Transaction, click: ClickForCustomer, input: LeadInput, serverMode: boolean) {
  const provisional = !serverMode && click.lead_auth === 'server_required';
  const customer = await insertCustomer(tx, {
    click,
    // Browser calls are unauthenticated: what they claim about the customer is not kept.
    customerKey: serverMode ? (input.customerKey ?? null) : null,
    email: serverMode ? (input.email ?? null) : null,
    status: 'lead',
    provisional,
    test: input.test || click.test,
    firstPurchaseDate: null,
  });
  const events: OutboxEvent[] = [customerChanged(customer, provisional ? 'provisional' : 'lead')];
  await appendEvents(tx, events);
  if (customer.test) await logTestEvent(tx, customer.program_id, 'lead', String(customer.id));
  return customer;
}

