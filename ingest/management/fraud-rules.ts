/**
 * The program setting fraud_rules (issue 31, point 5) on the management surface: in a create or a
 * change, an object naming some of the rules with true or false (the others stay as they are); in
 * the program's view, every rule.
 */
import { z } from 'zod';
import { FRAUD_RULES, fraudRulesOf } from '../../domain/fraud/rules.js';
import { M } from '../http/messages.js';
import { echo } from '../http/schemas.js';

const rule = (name: (typeof FRAUD_RULES)[number]) => z.boolean({ error: M.fraud.ruleValue(name) }).optional();

export const FraudRulesChange = z.strictObject(
  {
    self_referral: rule('self_referral').describe("The customer's email (lead or processor) is the partner's, or the processor customer is the partner's own"),
    click_flood: rule('click_flood').describe('The click came from an address that sent more than 20 clicks on the same link within the hour'),
    fast_conversion: rule('fast_conversion').describe('The sale came less than 10 seconds after its click'),
    partner_ip: rule('partner_ip').describe('The click came from an address the partner signed into the portal from'),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? M.fraud.unknownRule(echo(issue.keys[0], 40), FRAUD_RULES) : M.fraud.rules(FRAUD_RULES),
  },
);

/** Every rule as the program has it (a flagged commission is held for review). */
export const FraudRulesView = z.object({
  self_referral: z.boolean(),
  click_flood: z.boolean(),
  fast_conversion: z.boolean(),
  partner_ip: z.boolean(),
});

/** The stored object, whole (fraudRulesOf). */
export const fraudRulesView = fraudRulesOf;
