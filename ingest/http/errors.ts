import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError } from '../../domain/errors.js';
import { ApiError } from './api-error.js';
import { ERROR_NAMES, M } from './messages.js';
import type { RefusalLog } from './refusal-log.js';
import { failedAnswer, isSurface, platformCode, refusalAnswer, SURFACES, type FailureContext, type Surface } from './surfaces.js';

export { ApiError, badRequest, forbidden, notFound, typedError, unauthorized, type ApiErrorOptions } from './api-error.js';
export type { Surface } from './surfaces.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which API surface the route belongs to: how its errors are worded (ingest/http/surfaces.ts). */
    surface: Surface;
    /** A route anyone can flood (the processor webhook) writes its 4xx lines through this, throttled, not one per request. */
    logRefusal?: RefusalLog;
  }
}

interface ValidationIssue {
  message?: string;
  params?: { status?: number; code?: string; params?: { status?: number } };
}

/** The first issue decides the answer; a 422 (currency) yields to any 400 of the same request. */
function fromValidation(issues: ValidationIssue[]): ApiError {
  const statusOf = (i: ValidationIssue) => i.params?.params?.status ?? 400;
  const sorted = [...issues].sort((a, b) => statusOf(a) - statusOf(b));
  const first = sorted[0]!;
  return new ApiError(statusOf(first), first.message ?? M.body.notObject);
}

function fromFastify(error: FastifyError): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, M.body.tooLarge);
    case 'FST_ERR_BAD_URL':
      return new ApiError(400, M.body.badUrl);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(400, M.body.mediaType);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, M.body.invalidJson);
  }
  if (error instanceof SyntaxError) return new ApiError(400, M.body.invalidJson);
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new ApiError(status, status === 404 ? M.notFound : M.body.badRequest);
  }
  return undefined;
}

function render(error: ApiError, surface: Surface) {
  const { status } = error;
  if (error.options.envelope === 'typed') {
    return {
      ...error.options.topLevel,
      error: { code: error.options.code, message: error.message, ...error.options.extra },
    };
  }
  const body: { status: number; name: string; message: string; details: Record<string, unknown>; code?: string } = {
    status,
    name: ERROR_NAMES[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestError'),
    message: error.message,
    details: error.options.details ?? {},
  };
  const code = error.options.code ?? platformCode(surface, status);
  if (code !== undefined) body.code = code;
  return { data: null, error: body };
}

/** What a surface answers to an error: the ApiError and the envelope it renders to. */
export function answerTo(
  error: unknown,
  surface: Surface,
  failure: FailureContext = { requestId: '', body: undefined },
): { apiError: ApiError; body: ReturnType<typeof render> } {
  let apiError: ApiError;
  if (error instanceof ApiError) apiError = error;
  else if (error instanceof DomainError) apiError = refusalAnswer(surface, error.refusal);
  else if (hasZodFastifySchemaValidationErrors(error)) apiError = fromValidation(error.validation as ValidationIssue[]);
  else apiError = fromFastify(error as FastifyError) ?? failedAnswer(surface, failure);
  return { apiError, body: render(apiError, surface) };
}

/** The one error handler: typed errors to envelopes, 4xx logged as warn, 5xx as error, nothing internal leaked. */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  // Only a request that matched no route (a framework error) has no surface.
  const surface: Surface = request.routeOptions.config.surface ?? 'other';
  const { apiError, body } = answerTo(error, surface, { requestId: String(request.id), body: request.body });

  if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
  else {
    const fields = { status: apiError.status, reason: apiError.message };
    const logRefusal = request.routeOptions.config.logRefusal;
    if (logRefusal) logRefusal(request, fields, 'request refused');
    else request.log.warn(fields, 'request refused');
  }

  if (apiError.options.headers) reply.headers(apiError.options.headers);
  return reply.status(apiError.status).send(body);
}

export function notFoundHandler(_request: FastifyRequest, reply: FastifyReply) {
  return reply.status(404).send(render(new ApiError(404, M.notFound), 'other'));
}

/** Start-up check: a route that names no surface (or an unknown one) stops the service from starting. */
export function requireSurface(route: RouteOptions) {
  const surface: unknown = route.config?.surface;
  if (!isSurface(surface)) {
    const methods = ([] as string[]).concat(route.method).join(',');
    throw new Error(
      `Route ${methods} ${route.url} names no known surface in config.surface (got ${String(surface)}); ` +
        `one of: ${Object.keys(SURFACES).join(', ')}`,
    );
  }
}

export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
  app.addHook('onRoute', requireSurface);
}
