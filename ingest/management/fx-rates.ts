/**
 * POST /api/tracking/fx-rates (issue 30, ours): a workspace owner loads the workspace's own daily
 * exchange rates, in the operator's file format (domain/fx/csv.ts; npm run ops -- import-fx-rates
 * --help). They win over the operator's on the same day, for this workspace's programs only: no
 * owner can change another workspace's totals. The file is the body (`text/csv`), or JSON
 * `{"csv": "..."}`; `?workspace_id=` when the user belongs to several workspaces. Stored whole or
 * refused whole (400, every problem with its line in error.details.problems).
 */
import { z } from 'zod';
import type { Database } from '../../core/db.js';
import { workspacesOf } from '../../domain/access/workspaces.js';
import { importFxRates } from '../../domain/fx/rates.js';
import { auditContextOf } from '../http/audit.js';
import type { Auth } from '../http/auth.js';
import { ApiError, badRequest } from '../http/errors.js';
import { M } from '../http/messages.js';
import { body, type ZodApp } from '../http/schemas.js';
import { data, managementErrors } from './schemas.js';
import { sessionUserOf } from './session.js';

/** A whole ECB history with a few added currencies is under 2 MB. */
const FX_BODY_LIMIT = 8 * 1024 * 1024;

const WORKSPACE = M.management.workspaceId;
const FxRatesQuery = z.object({
  workspace_id: z
    .string({ error: WORKSPACE })
    .regex(/^[1-9]\d{0,15}$/, WORKSPACE)
    .transform(Number)
    .refine(Number.isSafeInteger, WORKSPACE)
    .optional(),
});
const FxRatesRequest = body({ csv: z.string({ error: M.fx.csv }).min(1, M.fx.csv) });

const FxImport = z.object({
  workspace_id: z.number().int(),
  read: z.number().int().describe('Rates in the file'),
  stored: z.number().int().describe('Rates stored now'),
  unchanged: z.number().int().describe('Rates already stored with the same value (left as they were)'),
  currencies: z.array(z.string()),
  first_day: z.string().nullable(),
  last_day: z.string().nullable(),
});

export function fxRateRoutes(app: ZodApp, { db, auth, clock }: { db: Database; auth: Auth; clock: () => number }) {
  // The file as the body: the parser hands the route the same shape a JSON body has.
  app.addContentTypeParser('text/csv', { parseAs: 'string', bodyLimit: FX_BODY_LIMIT }, (_request, payload, done) => done(null, { csv: payload }));

  app.post(
    '/fx-rates',
    {
      config: { surface: 'management' },
      bodyLimit: FX_BODY_LIMIT,
      ...auth.require('management'),
      schema: {
        summary: "Load the workspace's own daily exchange rates (owners; the ECB's CSV layout, stored whole or refused whole)",
        querystring: FxRatesQuery,
        body: FxRatesRequest,
        response: { 200: data(FxImport), ...managementErrors },
      },
    },
    async (request) => {
      let workspaceId = request.query.workspace_id;
      if (workspaceId === undefined) {
        const memberships = await workspacesOf(db, sessionUserOf(request));
        if (memberships.length !== 1) throw badRequest(M.management.workspaceRequired);
        workspaceId = memberships[0]!.workspaceId;
      }
      await auth.checkWorkspace(request, 'management', 'fx_rates:write', workspaceId);
      const today = new Date(clock()).toISOString().slice(0, 10);
      const outcome = await importFxRates(db, workspaceId, request.body.csv, today, auditContextOf(request));
      if (!outcome.ok) {
        const first = outcome.problems[0]!;
        throw new ApiError(400, M.fx.refused(`line ${first.line}: ${first.message}`), { details: { problems: outcome.problems } });
      }
      const s = outcome.summary;
      return {
        data: {
          workspace_id: workspaceId, read: s.read, stored: s.stored, unchanged: s.unchanged, currencies: s.currencies,
          first_day: s.firstDay, last_day: s.lastDay,
        },
      };
    },
  );
}
