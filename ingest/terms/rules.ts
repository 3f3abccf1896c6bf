import { listRuleVersions, type RuleVersion } from '../../domain/programs/terms.js';
import { data } from '../management/schemas.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { config, iso, termsAccess, termsErrors, type TermsContext } from './context.js';
import { RuleVersionOut } from './schemas.js';

export const versionOut = (v: RuleVersion) => ({
  id: v.id,
  version: v.version,
  group_id: v.group_id,
  group_name: v.group_name,
  effective_from: iso(v.effective_from),
  commission_type: v.commission_type,
  commission_rate: v.commission_rate,
  recurring_months: v.recurring_months,
  changed_by: v.changed_by,
  created_at: iso(v.created_at),
});

/** GET .../commission-rules: every version of the program's terms and its groups', with who changed what. */
export function ruleRoutes(app: ZodApp, { db, auth }: TermsContext) {
  app.get(
    '/programs/:programId/commission-rules',
    {
      config,
      ...termsAccess(auth).read,
      schema: {
        summary: "The commission rule versions of the program and of its groups, oldest first: terms, effective_from, who changed them",
        params: programIdParam,
        response: { 200: data(RuleVersionOut.array()), ...termsErrors },
      },
    },
    async (request) => ({ data: (await listRuleVersions(db, request.params.programId)).map(versionOut) }),
  );
}
