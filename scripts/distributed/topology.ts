/**
 * The whole distributed topology on one machine, without Docker (`npm run start:distributed`):
 * the stores and the event log (scripts/distributed/backing.ts), the schema of both databases and
 * the demo, then two ingest processes, one relay, two loaders in one consumer group and the
 * outgoing webhooks' process, each the production `main.ts <role>` under the supervisor. What it
 * started it stops, in order; what it found running it leaves alone.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { openDatabase, sql } from '../../core/db.js';
import { migrate } from '../../core/migrate.js';
import { loadOrCreateKeyFile } from '../../core/secret-box.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse } from '../../core/warehouse.js';
import { ensureDemo, type DemoStart } from '../../domain/demo.js';
import { ensureClickHouse, ensureDatabase, ensureKafka, ensurePostgres, ensureRedis, type Backing, type ClickHouseBacking } from './backing.js';
import { INGEST_PROCESSES, LOADER_PROCESSES, roleEnvironment, type TopologySettings } from './environment.js';
import { createSupervisor, type ProcessSpec, type Supervisor } from './supervisor.js';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/ats_distributed';
/** Where the running topology writes its processes' pids and its URLs (tests and scripts read it). */
export const STATE_FILE = 'distributed.json';
/** Inherited settings that would make the processes collide (one port for several processes). */
const NOT_INHERITED = ['OIDC_EMBEDDED_PORT', 'METRICS_PORT', 'SERVICE', 'PIPELINE'];

export interface TopologyOptions {
  root: string;
  env: Record<string, string | undefined>;
  say(line: string): void;
}

export interface Topology {
  ingestUrls: string[];
  backing: Backing[];
  clickhouse: ClickHouseBacking;
  demo: DemoStart | undefined;
  dataDir: string;
  loaderGroup: string;
  /** OIDC_ISSUER as given: the only sign-in by email here (no embedded provider). */
  oidcIssuer: string | undefined;
  stop(): Promise<void>;
}

function positivePort(name: string, value: string | undefined, fallback: number | undefined): number | undefined {
  if (value === undefined || value === '') return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65534) throw new Error(`${name} must be a port number from 1 to 65534, got ${JSON.stringify(value)}`);
  return port;
}

const demoProgram = sql('distributed.demo_program', `SELECT 1 AS found FROM programs WHERE id = $1`);

/** Schema of both stores, and the demo (made on the first start, kept in <DATA_DIR>/demo-credentials.json). */
async function prepareStores(settings: { databaseUrl: string; clickhouseUrl: string; dataDir: string; origin: string }, say: (line: string) => void) {
  const db = await openDatabase({ kind: 'postgres', url: settings.databaseUrl, poolSize: 2 });
  let demo: DemoStart | undefined;
  try {
    const applied = await migrate(db);
    if (applied.length) say(`Postgres: ${applied.length} migrations applied`);
    demo = await ensureDemo(db, settings.dataDir, settings.origin);
    if (!demo) say(`no demo: the database already holds workspaces and ${settings.dataDir} has no demo-credentials.json`);
    else if (!(await db.one(demoProgram, [demo.credentials.programId]))) {
      say(`${demo.file} names program ${demo.credentials.programId}, which this database does not hold (recreated?): remove the file for a new demo`);
    }
  } finally {
    await db.close();
  }
  const warehouse = await openWarehouse({ kind: 'http', url: settings.clickhouseUrl });
  try {
    const applied = await migrateWarehouse(warehouse);
    if (applied.length) say(`ClickHouse: ${applied.length} migrations applied`);
  } finally {
    await warehouse.close();
  }
  return demo;
}

export async function startTopology({ root, env, say }: TopologyOptions): Promise<Topology> {
  const host = env.HOST || '127.0.0.1';
  const port = positivePort('PORT', env.PORT, 3000)!;
  const dataDir = resolve(root, env.DATA_DIR || 'data/distributed');
  const databaseUrl = env.DISTRIBUTED_DATABASE_URL || DEFAULT_DATABASE_URL;
  const loaderGroup = env.LOADER_GROUP_ID || 'ats-loader';
  await mkdir(join(dataDir, 'logs'), { recursive: true });

  const started: Backing[] = [];
  let supervisor: Supervisor | undefined;
  let watch: NodeJS.Timeout | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (watch) clearInterval(watch);
      await supervisor?.stop(STOP_ORDER);
      for (const backing of [...started].reverse()) if (backing.started) await backing.stop().catch((error: Error) => say(`${backing.name}: ${error.message}`));
      await rm(join(dataDir, STATE_FILE), { force: true });
    })());

  try {
    const { redis, kafka, clickhouse } = await startBacking({ root, env, dataDir, databaseUrl, started, say });
    const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
    const ingestUrls = Array.from({ length: INGEST_PROCESSES }, (_, i) => `http://${shownHost}:${port + i}`);
    const demo = await prepareStores({ databaseUrl, clickhouseUrl: clickhouse.url, dataDir, origin: ingestUrls[0]! }, say);
    const secretsKey = env.SECRETS_KEY || (await loadOrCreateKeyFile(join(dataDir, 'secrets.key'))).toString('base64');
    const configured = (env.PROCESSOR_WEBHOOK_SECRETS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const demoSecret = demo?.credentials.processorWebhookSecret;
    const settings: TopologySettings = {
      host, port, databaseUrl, redisUrl: redis.url, kafkaBrokers: kafka.url, clickhouseUrl: clickhouse.url, secretsKey,
      processorWebhookSecrets: demoSecret && !configured.includes(demoSecret) ? [...configured, demoSecret] : configured,
    };
    const inherited = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && !NOT_INHERITED.includes(e[0])));
    const spec = (name: string, role: ProcessSpec['role'], index = 0): ProcessSpec => ({
      name, role, logFile: join(dataDir, 'logs', `${name}.log`), env: { ...inherited, LOADER_GROUP_ID: loaderGroup, ...roleEnvironment(settings, role, index) },
    });
    const writeState = () => {
      if (!stopping) writeStateFile(dataDir, supervisor!, clickhouse, ingestUrls);
    };
    supervisor = createSupervisor({ cwd: root, say, onChange: writeState });
    await startProcesses(supervisor, spec);
    watch = watchClickHouse(clickhouse, () => !!stopping, writeState, say);
    writeState();
    return { ingestUrls, backing: started, clickhouse, demo, dataDir, loaderGroup, oidcIssuer: env.OIDC_ISSUER || undefined, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Ingest first (no new writes), then the relay (publishes what they wrote), the loaders, the webhooks. */
const STOP_ORDER = [
  ...Array.from({ length: INGEST_PROCESSES }, (_, i) => `ingest-${i + 1}`),
  'relay',
  ...Array.from({ length: LOADER_PROCESSES }, (_, i) => `loader-${i + 1}`),
  'webhooks',
];

/** The stores and the log, each pushed on `started` as soon as it is there (a failure stops those). */
async function startBacking(o: { root: string; env: TopologyOptions['env']; dataDir: string; databaseUrl: string; started: Backing[]; say(line: string): void }) {
  const { root, env, say, started } = o;
  started.push(await ensurePostgres(o.databaseUrl, say));
  if (await ensureDatabase(o.databaseUrl)) say(`created database ${new URL(o.databaseUrl).pathname.slice(1)}`);
  const redis = await ensureRedis(env.REDIS_URL || undefined, say);
  started.push(redis);
  const kafka = await ensureKafka(
    root,
    {
      given: env.KAFKA_BROKERS || undefined,
      port: positivePort('KAFKA_PORT', env.KAFKA_PORT, undefined),
      controllerPort: positivePort('KAFKA_CONTROLLER_PORT', env.KAFKA_CONTROLLER_PORT, undefined),
      stateDir: join(o.dataDir, 'kafka'),
    },
    say,
  );
  started.push(kafka);
  const clickhouse = await ensureClickHouse(
    root,
    {
      given: env.CLICKHOUSE_URL || undefined,
      dataDir: join(o.dataDir, 'clickhouse'),
      port: positivePort('CLICKHOUSE_HTTP_PORT', env.CLICKHOUSE_HTTP_PORT, undefined),
      analystPassword: env.CLICKHOUSE_ANALYST_PASSWORD || 'analyst',
    },
    say,
  );
  started.push(clickhouse);
  return { redis, kafka, clickhouse };
}

/** Loaders, relay and webhooks first: the processes that answer HTTP come up on a pipeline already running. */
async function startProcesses(supervisor: Supervisor, spec: (name: string, role: ProcessSpec['role'], index?: number) => ProcessSpec): Promise<void> {
  await Promise.all([
    ...Array.from({ length: LOADER_PROCESSES }, (_, i) => supervisor.start(spec(`loader-${i + 1}`, 'loader'))),
    supervisor.start(spec('relay', 'relay')),
    // The outgoing webhooks' dispatcher and delivery worker (issue 32), as docker-compose.yml runs it.
    supervisor.start(spec('webhooks', 'webhooks')),
  ]);
  await Promise.all(Array.from({ length: INGEST_PROCESSES }, (_, i) => supervisor.start(spec(`ingest-${i + 1}`, 'ingest', i))));
}

/** Every second: a ClickHouse server started here that died is started again (one start at a time). */
function watchClickHouse(clickhouse: ClickHouseBacking, stopping: () => boolean, changed: () => void, say: (line: string) => void): NodeJS.Timeout {
  let reviving = false;
  return setInterval(() => {
    if (stopping() || reviving) return;
    reviving = true;
    clickhouse
      .revive()
      .then((revived) => revived && changed(), (error: Error) => say(error.message))
      .finally(() => (reviving = false));
  }, 1_000);
}

/** <DATA_DIR>/distributed.json: the supervisor's pid, every process's pid, the URLs (no secrets). */
function writeStateFile(dataDir: string, supervisor: Supervisor, clickhouse: ClickHouseBacking, ingestUrls: string[]): void {
  const processes = Object.fromEntries(supervisor.list().map((p) => [p.spec.name, { pid: p.pid() ?? null, restarts: p.restarts() }]));
  const state = {
    pid: process.pid,
    processes: { ...processes, ...(clickhouse.started ? { clickhouse: { pid: clickhouse.pid() ?? null } } : {}) },
    ingest: ingestUrls,
    clickhouse: clickhouse.url,
  };
  // Synchronous: a stop that removes the file never races a write still under way. Written aside
  // and renamed: a reader (a test, an operator's script) never sees it empty or half written.
  const file = join(dataDir, STATE_FILE);
  writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}
