/**
 * Where an analyst's query goes, chosen from the configuration and the data directory:
 *   distributed  CLICKHOUSE_URL is set: that server (use the read-only analyst user's URL);
 *   service      embedded, and the process that holds the warehouse runs: its SQL endpoint
 *                (address and token from <DATA_DIR>/sql-endpoint.json);
 *   direct       embedded, service stopped: the chDB data directory opened by this process.
 * A running service's data directory is never opened a second time (chDB allows one process per
 * directory): asking for `direct` while it runs is refused with the way to go instead.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../../core/config.js';
import { liveEndpointRecord, type EndpointRecord } from '../../core/operator-endpoint.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { ENDPOINT_FILE } from './endpoint.js';
import { QueryRefused, type QueryLimits, type RefusalReason } from './guard.js';
import { QueryFailed, runAnalyticsQuery, warehouseAccess, type AnalyticsRequest } from './run.js';

export type SqlTarget =
  | { kind: 'distributed'; url: string }
  | { kind: 'service'; endpoint: EndpointRecord }
  | { kind: 'direct'; path: string };

/** The configuration or the machine does not allow the chosen way (not the query's fault). */
export class TargetUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetUnavailable';
  }
}

/** The running service's endpoint record, or undefined when none runs (a stale file is ignored). */
export async function runningService(dataDir: string): Promise<EndpointRecord | undefined> {
  const file = join(dataDir, ENDPOINT_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  return liveEndpointRecord(text, () => new TargetUnavailable(`${file} is not a SQL endpoint record; remove it if no service runs`));
}

export async function chooseTarget(config: Pick<Config, 'warehouse' | 'dataDir'>, options: { direct?: boolean } = {}): Promise<SqlTarget> {
  if (config.warehouse.kind === 'http') {
    if (options.direct) throw new TargetUnavailable('--direct opens an embedded data directory; with CLICKHOUSE_URL set the queries go to that server');
    return { kind: 'distributed', url: config.warehouse.url };
  }
  const endpoint = await runningService(config.dataDir);
  if (endpoint) {
    if (options.direct) {
      throw new TargetUnavailable(
        `The service (pid ${endpoint.pid}) is running and holds ${config.warehouse.path}; a second process may not open it. ` +
          `Run without --direct: the query goes through the service's SQL endpoint (${endpoint.url}).`,
      );
    }
    return { kind: 'service', endpoint };
  }
  return { kind: 'direct', path: config.warehouse.path };
}

/** An open way to the warehouse: runs analyst queries, then is closed. */
export interface SqlSession {
  readonly target: SqlTarget;
  run(request: AnalyticsRequest, limits: QueryLimits): Promise<Buffer>;
  close(): Promise<void>;
}

/** A session on a warehouse this process has open (the direct and distributed targets). */
export function localSession(target: SqlTarget, warehouse: Warehouse): SqlSession {
  const access = warehouseAccess(warehouse);
  return { target, run: (request, limits) => runAnalyticsQuery(access, request, limits), close: () => warehouse.close() };
}

function serviceSession(target: Extract<SqlTarget, { kind: 'service' }>): SqlSession {
  return {
    target,
    async run(request, limits) {
      let res: Response;
      try {
        res = await fetch(`${target.endpoint.url}/sql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${target.endpoint.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ ...request, maxExecutionSeconds: limits.maxExecutionSeconds, maxMemoryBytes: limits.maxMemoryBytes }),
        });
      } catch (error) {
        throw new TargetUnavailable(`The service's SQL endpoint ${target.endpoint.url} did not answer: ${(error as Error).message}`);
      }
      const body = Buffer.from(await res.arrayBuffer());
      if (res.ok) return body;
      let problem: { reason?: string; message?: string } = {};
      try {
        problem = (JSON.parse(body.toString('utf8')) as { error?: typeof problem }).error ?? {};
      } catch {
        // not JSON: the status says enough
      }
      const message = problem.message ?? `The SQL endpoint answered ${res.status}`;
      if (res.status === 400 && problem.reason && !problem.reason.endsWith('_limit') && problem.reason !== 'query_failed' && problem.reason !== 'invalid_request') {
        throw new QueryRefused(problem.reason as RefusalReason, message);
      }
      if (res.status === 400) throw new QueryFailed(message, problem.reason === 'time_limit' ? 'time' : problem.reason === 'memory_limit' ? 'memory' : undefined);
      throw new TargetUnavailable(message);
    },
    close: async () => {},
  };
}

/** Opens the target. `direct` applies the pending warehouse migrations, as the service does at start. */
export async function openSqlSession(target: SqlTarget): Promise<SqlSession> {
  if (target.kind === 'service') return serviceSession(target);
  if (target.kind === 'distributed') return localSession(target, await openWarehouse({ kind: 'http', url: target.url }));
  if (!existsSync(target.path)) {
    throw new TargetUnavailable(`No warehouse at ${target.path}: start the service once (npm start), or point DATA_DIR at its data directory`);
  }
  let warehouse: Warehouse;
  try {
    warehouse = await openWarehouse({ kind: 'chdb', path: target.path });
  } catch (error) {
    if (/Cannot lock file|already running/i.test((error as Error).message)) {
      throw new TargetUnavailable(
        `Another process holds ${target.path} (a service started without its SQL endpoint, or another npm run sql). ` +
          `Stop it, or run the query through the running service (npm run sql without --direct).`,
      );
    }
    throw error;
  }
  await migrateWarehouse(warehouse);
  return localSession(target, warehouse);
}
