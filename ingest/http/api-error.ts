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
