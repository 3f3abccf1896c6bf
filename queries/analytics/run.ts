/**
 * One analyst query against one warehouse: checked (guard.ts) and run in a read-only session of
 * the engine with the limits, answered in the chosen format. The SQL endpoint of a running service,
 * `npm run sql` on a stopped service's data directory and the distributed mode all go through here.
 */
import type { ReadOnlySession, Warehouse } from '../../core/warehouse.js';
import { MESSAGES, OUTPUT_FORMATS, prepareQuery, QueryFailed, QueryRefused, type OutputFormat, type QueryLimits } from './guard.js';

export { QueryFailed } from './guard.js';

export interface AnalyticsRequest {
  query: string;
  /** Values of `{name:Type}` placeholders, bound by ClickHouse. */
  params?: Record<string, string>;
  format: OutputFormat;
}

export interface WarehouseAccess {
  /** A session in which ClickHouse runs every statement read-only within the limits. */
  readOnly(limits: QueryLimits): Promise<ReadOnlySession>;
}

export function warehouseAccess(warehouse: Warehouse): WarehouseAccess {
  const readOnly = warehouse.readOnly?.bind(warehouse);
  if (!readOnly) throw new Error('This warehouse cannot answer analytics queries (no read-only session)');
  return { readOnly };
}

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Maps ClickHouse's refusals to what the analyst needs to read; the engine's own words stay. */
function failure(error: unknown, limits: QueryLimits): Error {
  if (error instanceof QueryRefused || error instanceof QueryFailed) return error;
  const e = error as { code?: string; type?: string; message?: string };
  const message = (e.message ?? String(error)).trim();
  if (/Multi-statements are not allowed/.test(message)) {
    return new QueryRefused('multiple_statements', MESSAGES.multipleStatements);
  }
  if (e.type === 'READONLY' || e.code === '164') {
    if (/Cannot modify '.+' setting/.test(message)) {
      return new QueryRefused('settings_clause', `Settings are fixed by the service (SQL_MAX_EXECUTION_SECONDS, SQL_MAX_MEMORY_BYTES): ${message}`);
    }
    return new QueryRefused('external_access', `Refused by ClickHouse in read-only mode: ${message}`);
  }
  if (e.type === 'INTO_OUTFILE_NOT_ALLOWED' || e.code === '358') {
    return new QueryRefused('into_outfile', `${MESSAGES.intoOutfile} (${message})`);
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
  const params = request.params ?? {};
  for (const name of Object.keys(params)) {
    if (!PARAM_NAME.test(name)) throw new QueryFailed(`Invalid parameter name ${JSON.stringify(name)}`, undefined);
  }
  let session: ReadOnlySession | undefined;
  try {
    session = await access.readOnly(limits);
    const query = await prepareQuery(session, request.query, params);
    return await session.bytes(query, params, OUTPUT_FORMATS[request.format]);
  } catch (error) {
    throw failure(error, limits);
  } finally {
    await session?.close();
  }
}
