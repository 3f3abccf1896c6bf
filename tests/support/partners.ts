/**
 * Helpers of the partner program's tests (issue 31): an application, its approval and a ban,
 * through the HTTP routes, so the event-contract tests see partner.applied, partner.approved and a
 * partner_program.changed of every state.
 */
import type { FastifyInstance } from 'fastify';
import { freshIp, type TestProgram } from './app.js';

let serial = 0;

/** Opens the program to applications, applies, approves, and applies again to reject and ban: every partner event. */
export async function everyPartnerEvent(app: FastifyInstance, program: Pick<TestProgram, 'programId' | 'workspace'>): Promise<{ approved: number; banned: number }> {
  const owner = { authorization: `Bearer ${program.workspace.ownerToken}` };
  const base = `/api/tracking/programs/${program.programId}`;
  const must = async (res: Promise<{ statusCode: number; body: string; json(): { data: { partner_id: number } } }>) => {
    const r = await res;
    if (r.statusCode !== 200) throw new Error(`partner event step answered ${r.statusCode}: ${r.body}`);
    return r.json().data;
  };
  await must(app.inject({ method: 'PATCH', url: base, headers: owner, payload: { applications_open: true } }) as never);
  const apply = async (tag: string) =>
    (
      await must(
        app.inject({
          method: 'POST',
          url: '/api/v1/partners/apply',
          headers: { 'x-forwarded-for': freshIp() },
          payload: { program_id: program.programId, name: `Applicant ${tag}`, email: `applicant-${tag}-${Date.now()}-${(serial += 1)}@partners.example`, website: 'https://applicant.example' },
        }),
      )
    ).partner_id;
  const approved = await apply('approved');
  await must(app.inject({ method: 'POST', url: `${base}/partners/${approved}/approve`, headers: owner }));
  const banned = await apply('banned');
  await must(app.inject({ method: 'POST', url: `${base}/partners/${banned}/reject`, headers: owner }));
  await must(app.inject({ method: 'POST', url: `${base}/partners/${banned}/ban`, headers: owner }));
  return { approved, banned };
}
