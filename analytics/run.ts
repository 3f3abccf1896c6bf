/**
 * One analyst query against one warehouse: checked (guard.ts), run under the limits, answered in
 * the chosen format. The SQL endpoint of a running service, `npm run sql` on a stopped service's
 * data directory and the distributed mode all go through here.
 */
import type { NamedQuery } from '../core/db.js';
import type { Warehouse } from '../core/warehouse.js';
import { prepareQuery, QueryRefused, sessionReadOnly, type OutputFormat, type QueryLimits, type WarehouseAccess } from './guard.js';

export interface AnalyticsRequest {
  query: string;
  /** Values of `{name:Type}` placeholders, bound by ClickHouse. */
  params?: Record<string, string>;
  format: OutputFormat;
}

/** A query ClickHouse refused or could not finish (limit reached, syntax, unknown table...). */
export class QueryFailed extends Error {
  constructor(
    message: string,
    readonly limit: 'time' | 'memory' | undefined,
  ) {
    super(message);
    this.name = 'QueryFailed';
  }
}

export function warehouseAccess(warehouse: Warehouse): WarehouseAccess {
  const queryBytes = warehouse.queryBytes?.bind(warehouse);
  if (!queryBytes) throw new Error('This warehouse cannot answer analytics queries (no queryBytes)');
  return { bytes: (query: NamedQuery, params?: Record<string, unknown>) => queryBytes(query, params) };
}

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Maps ClickHouse's refusals to what the analyst needs to read; the engine's own words stay. */
function failure(error: unknown, limits: QueryLimits): Error {
  if (error instanceof QueryRefused) return error;
  const e = error as { code?: string; type?: string; message?: string };
  const message = (e.message ?? String(error)).trim();
  if (e.type === 'READONLY' || e.code === '164') {
    return new QueryRefused('external_access', `Refused by ClickHouse in read-only mode: ${message}`);
  }
  if (e.type === 'TIMEOUT_EXCEEDED' || e.code === '159') {
    return new QueryFailed(`The query ran longer than ${limits.maxExecutionSeconds} s (SQL_MAX_EXECUTION_SECONDS) and was stopped: ${message}`, 'time');
  }
  if (e.type === 'MEMORY_LIMIT_EXCEEDED' || e.code === '241') {
    return new QueryFailed(`The query needed more than ${limits.maxMemoryBytes} bytes (SQL_MAX_MEMORY_BYTES) and was stopped: ${message}`, 'memory');
  }
  return new QueryFailed(message, undefined);
}

/** Checks and runs the query; throws QueryRefused (never ran) or QueryFailed (ClickHouse said no). */
export async function runAnalyticsQuery(access: WarehouseAccess, request: AnalyticsRequest, limits: QueryLimits): Promise<Buffer> {
  for (const name of Object.keys(request.params ?? {})) {
    if (!PARAM_NAME.test(name)) throw new QueryFailed(`Invalid parameter name ${JSON.stringify(name)}`, undefined);
  }
  try {
    const readOnly = await sessionReadOnly(access);
    const query = await prepareQuery(access, request.query, { format: request.format, limits, sessionReadOnly: readOnly, params: request.params });
    return await access.bytes(query, request.params);
  } catch (error) {
    throw failure(error, limits);
  }
}
