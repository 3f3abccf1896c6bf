import type { Database } from '../../core/db.js';
import { processorEventsOf } from '../../domain/payments/connections.js';
import type { Auth } from '../http/auth.js';
import { programIdParam, type ZodApp } from '../http/schemas.js';
import { ProcessorEventsResponse, ProcessorEventsQuery, connectionErrors } from './schemas.js';

const secondsToIso = (seconds: number) => {
  // Clamped to what a JS date holds: a time stored before created was checked may lie beyond it.
  const ms = Math.max(-8.64e15, Math.min(8.64e15, seconds * 1000));
  return new Date(ms).toISOString();
};

/** GET /programs/:programId/processor-events: what the processor sent about the program, for the dashboard (tracking:read). */
export function processorEventRoutes(app: ZodApp, { db, auth }: { db: Database; auth: Auth }) {
  app.get(
    '/programs/:programId/processor-events',
    {
      config: { surface: 'management' },
      ...auth.require('management', 'tracking:read'),
      schema: {
        summary: 'The processor events that reached the program, newest first, with their outcome (recorded, skipped and why, ignored, waiting) and delivery count',
        params: programIdParam,
        querystring: ProcessorEventsQuery,
        response: { 200: ProcessorEventsResponse, ...connectionErrors },
      },
    },
    async (request) => {
      const rows = await processorEventsOf(db, request.params.programId, request.query.limit);
      return {
        data: rows.map(({ event_created_seconds, ...r }) => ({
          ...r,
          deliveries: Number(r.deliveries),
          sale_amount_minor: r.sale_amount_minor === null ? null : Number(r.sale_amount_minor),
          event_created_at: secondsToIso(Number(event_created_seconds)),
          received_at: r.received_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
        })),
      };
    },
  );
}
