/**
 * The fraud rules of the contract (partner-program.md, "Fraud review"), each on or off per program
 * (programs.fraud_rules, all on by default). What each one flags: schemas/postgres/functions/fraud_flags.sql.
 */
import { sql, type Queryable } from '../../core/db.js';

export const FRAUD_RULES = ['self_referral', 'click_flood', 'fast_conversion', 'partner_ip'] as const;
export type FraudRule = (typeof FRAUD_RULES)[number];
export type FraudRules = Record<FraudRule, boolean>;

export const isFraudRule = (name: string): name is FraudRule => (FRAUD_RULES as readonly string[]).includes(name);

/** Every rule off: what a program that reviews nothing by rule sets. */
export const NO_FRAUD_RULES: FraudRules = { self_referral: false, click_flood: false, fast_conversion: false, partner_ip: false };

/**
 * The rules as stored, whole: a rule missing from the stored object (a rule added after the program
 * last changed its rules) is on, as the default says.
 */
export function fraudRulesOf(stored: Partial<Record<string, unknown>> | null | undefined): FraudRules {
  const rules = { self_referral: true, click_flood: true, fast_conversion: true, partner_ip: true };
  for (const name of FRAUD_RULES) if (typeof stored?.[name] === 'boolean') rules[name] = stored[name] as boolean;
  return rules;
}

const q = {
  set: sql('fraud.set_rules', `UPDATE programs SET fraud_rules = fraud_rules || $2::jsonb, updated_at = now() WHERE id = $1`),
};

/** Turns the named rules on or off, the others as they were (in the caller's transaction: the program change audits it). */
export async function setFraudRules(tx: Queryable, programId: number, change: Partial<FraudRules>): Promise<void> {
  await tx.many(q.set, [programId, JSON.stringify(change)]);
}
