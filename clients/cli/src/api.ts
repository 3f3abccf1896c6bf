/** What the service answered, when it was not a success. */
export class ServiceError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly requestId: string | undefined;
  constructor(status: number, message: string, extra: { code?: string; retryAfterSeconds?: number; requestId?: string } = {}) {
    super(message);
    this.name = 'ServiceError';
    this.status = status;
    this.code = extra.code;
    this.retryAfterSeconds = extra.retryAfterSeconds;
    this.requestId = extra.requestId;
  }
}

/** The service could not be reached at all. */
export class UnreachableError extends Error {
  constructor(baseUrl: string, cause: unknown) {
    super(`Cannot reach the service at ${baseUrl}: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'UnreachableError';
  }
}

export interface RequestOptions {
  method?: 'GET' | 'POST';
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

/** A thin client of /api/v1/cli/: JSON in, `data` out, every error as a ServiceError (error.code first, then error.message). */
export function createApi(baseUrl: string) {
  async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const url = new URL(`/api/v1/cli${path}`, baseUrl);
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, {
        method: options.method ?? 'GET',
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new UnreachableError(baseUrl, (error as { cause?: unknown }).cause ?? error);
    }
    const text = await response.text();
    let json: { data?: T; error?: { code?: string; message?: string; retry_after_seconds?: number } } = {};
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      // not JSON: reported below by status
    }
    if (!response.ok) {
      const retryAfter = json.error?.retry_after_seconds ?? (Number(response.headers.get('retry-after')) || undefined);
      throw new ServiceError(response.status, json.error?.message ?? `The service answered ${response.status}`, {
        code: json.error?.code,
        retryAfterSeconds: retryAfter,
        requestId: response.headers.get('x-request-id') ?? undefined,
      });
    }
    return json.data as T;
  }
  return { baseUrl, request };
}

export type Api = ReturnType<typeof createApi>;
