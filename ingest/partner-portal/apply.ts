import type { FastifyReply } from 'fastify';
import { sql, type Database } from '../../core/db.js';
import { applyToProgram, type Application } from '../../domain/partners/applications.js';
import { ApiError, notFound } from '../http/errors.js';
import type { rateLimitHook } from '../http/rate-limit.js';
import { PlatformError, programIdParam, TypedError, type ZodApp } from '../http/schemas.js';
import { PM } from './messages.js';
import { ApplicationForm, Applied, ApplyRequest, data } from './schemas.js';
import { applicationForm, notice, type FormValues } from './views.js';

const config = { surface: 'partner' as const };

const openProgram = sql('applications.open_program', `SELECT id, name FROM programs WHERE id = $1 AND applications_open`);

const html = (reply: FastifyReply, status: number, body: string) =>
  reply.status(status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(body);

/**
 * Applications (partner-program.md): the public form GET /apply/:programId, which posts to
 * POST /apply/:programId and answers a page, and POST /api/v1/partners/apply (JSON). Both are
 * limited per client address (`limit`) and refuse a program that takes no applications with 404.
 */
export function applyRoutes(app: ZodApp, { db, limit }: { db: Database; limit: ReturnType<typeof rateLimitHook> }) {
  app.post(
    '/api/v1/partners/apply',
    {
      config,
      onRequest: limit,
      schema: {
        summary: 'Apply to a program that takes applications (public; a pending partner)',
        body: ApplyRequest,
        response: { 200: data(Applied), 400: PlatformError, 404: PlatformError, 409: PlatformError, 429: TypedError },
      },
    },
    async (request) => {
      const { program_id: programId, ...fields } = request.body;
      const result = await applyToProgram(db, { programId, ...fields });
      if (result.outcome === 'not_found') throw notFound(PM.apply.notFound);
      if (result.outcome === 'duplicate') throw new ApiError(409, PM.apply.duplicate);
      return { data: { partner_id: result.partnerId, program_id: programId, status: 'pending' as const } };
    },
  );

  app.get(
    '/apply/:programId',
    { config, onRequest: limit, schema: { hide: true, params: programIdParam } },
    async (request, reply) => {
      const program = await db.one<{ id: number; name: string }>(openProgram, [request.params.programId]);
      if (!program) return html(reply, 404, notice('Applications closed', PM.apply.notFound, 'error'));
      return html(reply, 200, applicationForm({ id: Number(program.id), name: program.name }));
    },
  );

  // The form's post: the same validation as the JSON route, answered as a page.
  app.post(
    '/apply/:programId',
    { config, onRequest: limit, schema: { hide: true, params: programIdParam } },
    async (request, reply) => {
      const program = await db.one<{ id: number; name: string }>(openProgram, [request.params.programId]);
      if (!program) return html(reply, 404, notice('Applications closed', PM.apply.notFound, 'error'));
      const form = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<string, unknown>;
      const values: FormValues = {};
      for (const k of ['name', 'email', 'website', 'message'] as const) if (typeof form[k] === 'string') values[k] = (form[k] as string).slice(0, 2000);
      const parsed = ApplicationForm.safeParse(form);
      const target = { id: Number(program.id), name: program.name };
      if (!parsed.success) return html(reply, 400, applicationForm(target, values, parsed.error.issues[0]?.message ?? PM.apply.name));
      const application: Application = { programId: target.id, ...parsed.data };
      const result = await applyToProgram(db, application);
      if (result.outcome === 'not_found') return html(reply, 404, notice('Applications closed', PM.apply.notFound, 'error'));
      if (result.outcome === 'duplicate') {
        return html(reply, 409, notice('Already applied', `You have already applied to ${program.name} with this email. The brand will review your application and contact you.`, 'ok'));
      }
      return html(reply, 200, notice('Application sent', `Thank you, ${parsed.data.name}. Your application to ${program.name} was received; the brand will review it and contact you at ${parsed.data.email}.`));
    },
  );
}
