import type { Database, Queryable } from '../../core/db.js';
import { trackingWrite } from './tracking-writes.js';
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

/** What record_lead returns (times as ISO strings). */
interface RecordedLead {
  customer_id: number;
  program_id: number;
  click_id: string | null;
  status: 'lead' | 'conversion';
  signup_date: string | null;
  provisional: boolean;
}

const leadItem = (i: LeadInput) => ({
  click_id: i.clickId ?? null,
  customer_key: i.customerKey ?? null,
  email: i.email ?? null,
  test: i.test,
  key_program_id: i.keyProgramId ?? null,
  origin: i.origin ?? null,
});

function leadResult(result: unknown): LeadResult {
  const c = result as RecordedLead;
  return {
    customerId: c.customer_id,
    programId: c.program_id,
    clickId: c.click_id,
    status: c.status,
    signupDate: c.signup_date === null ? null : new Date(c.signup_date),
    provisional: c.provisional,
  };
}

const leads = trackingWrite('lead', leadItem, leadResult);

/**
 * A signup: one statement, atomic on its own or in the caller's transaction. Server mode (valid
 * key) settles; browser mode on a server_required program leaves a provisional lead whose customer
 * key is not saved. First click wins. The rules are in record_lead (schemas/postgres/functions/record_lead.sql).
 */
export const recordLead = (db: Queryable, input: LeadInput): Promise<LeadResult> => leads.one(db, input);

/** POST /track/lead's writer: concurrent leads in one statement and one commit (tracking-writes.ts). */
export const createLeadWriter = (db: Database) => leads.batched(db);
