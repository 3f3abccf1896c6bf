import type { FastifyReply, FastifyRequest } from 'fastify';
import { integrationFacts, integrationStatus } from '../../domain/programs/integration-status.js';
import { createClickWriter } from '../../domain/tracking/clicks.js';
import { runTestChain, runTestEvent } from '../../domain/tracking/test-chains.js';
import type { ZodApp } from '../http/schemas.js';
import type { CliRouteContext } from './context.js';
import { StatusResponse, TestEventRequest, TestEventResponse, cliErrors } from './schemas.js';

const programOf = (request: FastifyRequest) => {
  if (request.principal?.kind !== 'programKey') throw new Error('this CLI route runs with a program key');
  return request.principal.programId;
};

// The spec: GET /status carries X-Request-ID only on its 500.
const requestIdOnlyOn500 = (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
  if (reply.statusCode !== 500) reply.removeHeader('X-Request-ID');
  done(null, payload);
};

/** The routes of a program key: the integration checklist and synthetic test events (one, or the click-lead-sale chain). */
export function programKeyRoutes(app: ZodApp, { deps, auth }: CliRouteContext) {
  const { db } = deps;
  const synthetic = { db, clicks: createClickWriter(db), platformFeeBps: deps.platformFeeBps };

  app.get(
    '/status',
    {
      config: { surface: 'cliStatus' },
      ...auth.require('cliProgramKey'),
      onSend: requestIdOnlyOn500,
      schema: { summary: "The integration checklist of the key's program (program key)", response: { 200: StatusResponse, ...cliErrors } },
    },
    async (request) => {
      const programId = programOf(request);
      const facts = await integrationFacts(db, programId);
      if (!facts) throw new Error(`program ${programId} of a valid key has no row`);
      return { data: integrationStatus(programId, facts, new Date(deps.clock())) };
    },
  );

  app.post(
    '/test-event',
    {
      config: { surface: 'cliTestEvent' },
      ...auth.require('cliProgramKey'),
      schema: { summary: 'Run a synthetic test event, or the click-lead-sale chain (program key)', body: TestEventRequest, response: { 200: TestEventResponse, ...cliErrors } },
    },
    async (request) => {
      const programId = programOf(request);
      const b = request.body;
      if (b.mode === 'single') {
        const { event } = await runTestEvent(synthetic, programId, b.eventType);
        const { event_type, ...recorded } = event;
        return { data: { mode: 'single' as const, test_mode: true as const, event_type, recorded } };
      }
      const chain = await runTestChain(synthetic, programId);
      const f = chain.fixtures;
      return {
        data: {
          mode: 'chain' as const,
          test_mode: true as const,
          fixtures: { partner_id: f.partnerId, aff_code: f.affCode, affiliate_url: f.affiliateUrl, created: f.created, refreshed_at: f.refreshedAt.toISOString() },
          steps: chain.steps.map(({ event_type, ...recorded }) => ({ step: event_type, recorded })),
          chains_left_this_hour: chain.chainsLeftThisHour,
        },
      };
    },
  );
}
