import { createGroup, deleteGroup, getGroup, listGroups, setPartnerGroup, updateGroup, type GroupView } from '../../domain/programs/groups.js';
import { RECURRING_TYPES, type Terms } from '../../domain/programs/terms.js';
import type { CommissionType } from '../../domain/tracking/commissions.js';
import { auditContextOf } from '../http/audit.js';
import { badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { checkCommissionRate, checkRecurringMonths, data } from '../management/schemas.js';
import { config, iso, termsAccess, termsErrors, type TermsContext } from './context.js';
import { CreateGroupRequest, Deleted, GroupOut, GroupParams, GroupPartnerParams, PartnerGroupOut, UpdateGroupRequest } from './schemas.js';

const groupOut = (g: GroupView) => ({
  ...g,
  terms: g.terms === null ? null : { ...g.terms, effective_from: iso(g.terms.effective_from) },
  created_at: iso(g.created_at),
  updated_at: iso(g.updated_at),
});

interface TermFields {
  commission_type?: CommissionType | undefined;
  commission_rate?: number | undefined;
  recurring_months?: number | null | undefined;
  effective_from?: Date | undefined;
}

const touchesTerms = (b: TermFields) =>
  b.commission_type !== undefined || b.commission_rate !== undefined || b.recurring_months !== undefined || b.effective_from !== undefined;

/**
 * The group's terms after a change: the fields sent over the current terms. A group without terms
 * of its own needs commission_type and commission_rate together; a one-off type clears recurring_months.
 */
function mergedTerms(b: TermFields, current: Terms | null): Terms {
  const type = b.commission_type ?? current?.commission_type;
  const rate = b.commission_rate ?? current?.commission_rate;
  if (type === undefined || rate === undefined) throw badRequest(M.terms.termsIncomplete);
  checkCommissionRate(type, rate);
  checkRecurringMonths(type, b.recurring_months);
  const recurring = RECURRING_TYPES.includes(type);
  const months = b.recurring_months !== undefined ? b.recurring_months : recurring ? (current?.recurring_months ?? null) : null;
  return { commission_type: type, commission_rate: rate, recurring_months: months };
}

/**
 * Partner groups (issue 30): create, list, read, rename or change terms, delete (refused while
 * partners are in it), and a partner put in or taken out of a group. Members read, owners write.
 */
export function groupRoutes(app: ZodApp, { db, auth }: TermsContext) {
  const access = termsAccess(auth);

  app.post(
    '/programs/:programId/groups',
    {
      config,
      ...access.write,
      schema: {
        summary: "Create a partner group; optional terms (commission_type, commission_rate, recurring_months) override the program's for its partners",
        params: programIdParam,
        body: CreateGroupRequest,
        response: { 200: data(GroupOut), ...termsErrors },
      },
    },
    async (request) => {
      const { name, effective_from: effectiveFrom, ...fields } = request.body;
      const terms = touchesTerms(request.body) ? mergedTerms(fields, null) : undefined;
      return { data: groupOut(await createGroup(db, request.params.programId, { name, terms, effectiveFrom }, auditContextOf(request))) };
    },
  );

  app.get(
    '/programs/:programId/groups',
    { config, ...access.read, schema: { summary: "The program's partner groups with their partner counts and current terms", params: programIdParam, response: { 200: data(GroupOut.array()), ...termsErrors } } },
    async (request) => ({ data: (await listGroups(db, request.params.programId)).map(groupOut) }),
  );

  app.get(
    '/programs/:programId/groups/:groupId',
    { config, ...access.read, schema: { summary: 'One partner group', params: GroupParams, response: { 200: data(GroupOut), ...termsErrors } } },
    async (request) => ({ data: groupOut(await getGroup(db, request.params.programId, request.params.groupId)) }),
  );

  app.patch(
    '/programs/:programId/groups/:groupId',
    {
      config,
      ...access.write,
      schema: {
        summary: "Rename a group and/or change its terms (a new rule version from effective_from, default now)",
        params: GroupParams,
        body: UpdateGroupRequest,
        response: { 200: data(GroupOut), ...termsErrors },
      },
    },
    async (request) => {
      const { programId, groupId } = request.params;
      const { name, effective_from: effectiveFrom, ...fields } = request.body;
      if (name === undefined && !touchesTerms(request.body)) throw badRequest(M.terms.patchEmpty);
      const current = await getGroup(db, programId, groupId);
      const terms = touchesTerms(request.body) ? mergedTerms(fields, current.terms) : undefined;
      return { data: groupOut(await updateGroup(db, programId, groupId, { name, terms, effectiveFrom }, auditContextOf(request))) };
    },
  );

  app.delete(
    '/programs/:programId/groups/:groupId',
    {
      config,
      ...access.write,
      schema: { summary: 'Delete a group (409 while partners are in it); its rule versions stay listed', params: GroupParams, response: { 200: data(Deleted), ...termsErrors } },
    },
    async (request) => {
      await deleteGroup(db, request.params.programId, request.params.groupId, auditContextOf(request));
      return { data: { deleted: true as const } };
    },
  );

  app.put(
    '/programs/:programId/groups/:groupId/partners/:partnerId',
    {
      config,
      ...access.write,
      schema: {
        summary: "Put a partner in the group, moving it out of its current one: it earns the group's terms on its next sales",
        params: GroupPartnerParams,
        response: { 200: data(PartnerGroupOut), ...termsErrors },
      },
    },
    async (request) => {
      const { programId, groupId, partnerId } = request.params;
      return { data: await setPartnerGroup(db, programId, partnerId, groupId, auditContextOf(request)) };
    },
  );

  app.delete(
    '/programs/:programId/groups/:groupId/partners/:partnerId',
    {
      config,
      ...access.write,
      schema: { summary: "Take a partner out of the group: it earns the program's terms on its next sales", params: GroupPartnerParams, response: { 200: data(PartnerGroupOut), ...termsErrors } },
    },
    async (request) => {
      const { programId, groupId, partnerId } = request.params;
      return { data: await setPartnerGroup(db, programId, partnerId, null, auditContextOf(request), groupId) };
    },
  );
}
