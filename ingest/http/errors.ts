import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ERROR_NAMES, M, SALE_CODE_BY_STATUS } from './messages.js';

/**
 * The API surfaces whose errors differ: the 500 message, whether the platform envelope carries
 * error.code (sale, refund), and whether errors use the typed envelope (readiness).
 */
export type Surface = 'click' | 'lead' | 'sale' | 'refund' | 'readiness' | 'management' | 'performance' | 'status' | 'other';

declare module 'fastify' {
  interface FastifyContextConfig {
    surface?: Surface;
  }
}

type Envelope = 'platform' | 'typed';

export interface ApiErrorOptions {
  /** error.code: in the typed envelope always; in the platform envelope only where the spec names one. */
  code?: string;
  details?: Record<string, unknown>;
  envelope?: Envelope;
  /** Typed envelope: extra fields inside `error` (hint, docs_url, retry_after_seconds...). */
  extra?: Record<string, unknown>;
  /** Typed envelope: fields beside `error` (link_disabled keeps success and message). */
  topLevel?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** An error the client caused or may act on; mapped to one of the spec's two envelopes. */
export class ApiError extends Error {
  readonly status: number;
  readonly options: ApiErrorOptions;
  constructor(status: number, message: string, options: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.options = options;
  }
}

export const badRequest = (message: string, code?: string) => new ApiError(400, message, code ? { code } : {});
export const unauthorized = (message: string) => new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (message: string) => new ApiError(404, message);
export const typedError = (status: number, code: string, message: string, extra: Record<string, unknown> = {}) =>
  new ApiError(status, message, { envelope: 'typed', code, extra });

const FAILURE_MESSAGE: Record<Surface, string> = {
  click: M.click.failed,
  lead: M.lead.failed,
  sale: M.sale.failed,
  refund: M.refund.failed,
  readiness: M.readiness.failed,
  management: M.management.failed,
  performance: M.dashboard.performanceFailed,
  status: M.dashboard.statusFailed,
  other: M.management.failed,
};

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
  const code = error.options.code ?? (surface === 'sale' || surface === 'refund' ? SALE_CODE_BY_STATUS[status] : undefined);
  if (code !== undefined) body.code = code;
  return { data: null, error: body };
}

function internalError(surface: Surface): ApiError {
  if (surface === 'readiness') {
    return typedError(500, 'internal_error', M.readiness.failed, { retry_after_seconds: M.readiness.retryAfterSeconds });
  }
  return new ApiError(500, FAILURE_MESSAGE[surface]);
}

/** The one error handler: typed errors to envelopes, 4xx logged as warn, 5xx as error, nothing internal leaked. */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const surface = request.routeOptions.config.surface ?? 'other';
  let apiError: ApiError;
  if (error instanceof ApiError) apiError = error;
  else if (hasZodFastifySchemaValidationErrors(error)) apiError = fromValidation(error.validation as ValidationIssue[]);
  else apiError = fromFastify(error as FastifyError) ?? internalError(surface);

  if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
  else request.log.warn({ status: apiError.status, reason: apiError.message }, 'request refused');

  if (apiError.options.headers) reply.headers(apiError.options.headers);
  return reply.status(apiError.status).send(render(apiError, surface));
}

export function notFoundHandler(_request: FastifyRequest, reply: FastifyReply) {
  return reply.status(404).send(render(new ApiError(404, M.notFound), 'other'));
}

export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);
}
