/**
 * The stores and the event log under `npm run start:distributed`: the machine's own when they
 * answer, started here when they do not (and then stopped here, and only then): PostgreSQL
 * (pg_ctlcluster, as .ci/run does), Redis (redis-server as a child), Kafka
 * (scripts/kafka-broker.sh) and the ClickHouse HTTP server (scripts/clickhouse-server.sh, in the
 * data directory, watched and started again if it dies).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** A store or log the topology uses; `started`: this run started it, so this run stops it. */
export interface Backing {
  name: string;
  url: string;
  started: boolean;
  stop(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function tcpOpen(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Whether nothing listens on host:port (a bind test, so a port in TIME_WAIT still counts as free). */
export function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what} did not answer within ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

/** Runs one of the repository's service scripts; its output goes to `say`, its failure is thrown with that output. */
async function script(root: string, name: string, command: string, env: Record<string, string>, say: (line: string) => void): Promise<void> {
  try {
    const { stdout, stderr } = await run('bash', [join(root, 'scripts', name), command], { cwd: root, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 });
    for (const line of `${stdout}${stderr}`.split('\n')) if (line.trim()) say(line);
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/${name} ${command} failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

const pgReady = (host: string, port: string) =>
  run('pg_isready', ['-h', host, '-p', port, '-q']).then(
    () => true,
    () => false,
  );

/** The machine's PostgreSQL cluster (the first under /etc/postgresql), started when it does not answer on loopback. */
export async function ensurePostgres(databaseUrl: string, say: (line: string) => void): Promise<Backing> {
  const url = new URL(databaseUrl);
  const host = url.hostname || '127.0.0.1';
  const port = url.port || '5432';
  const backing = { name: 'Postgres', url: databaseUrl, started: false, stop: async () => {} };
  if (await pgReady(host, port)) return backing;
  const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').sort() : [];
  if (!LOOPBACK.has(host) || versions.length === 0) throw new Error(`PostgreSQL does not answer at ${host}:${port} (pg_isready), and no local cluster to start`);
  const version = versions[0]!;
  say(`starting PostgreSQL ${version} (pg_ctlcluster)`);
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start']);
  await until('PostgreSQL', 30_000, () => pgReady(host, port));
  return {
    ...backing,
    started: true,
    stop: async () => {
      say('stopping PostgreSQL (started here)');
      await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'stop']).catch(() => undefined);
    },
  };
}

const DATABASE_NAME = /^[a-z_][a-z0-9_]*$/;

/** Creates the URL's database on its server when it is missing (through that server's `postgres` database). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!DATABASE_NAME.test(name)) throw new Error(`DISTRIBUTED_DATABASE_URL must name a database of lower-case letters, digits and _ (got ${JSON.stringify(name)})`);
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    await admin.query(`CREATE DATABASE ${name}`);
    return true;
  } finally {
    await admin.end();
  }
}

const redisPing = (url: string) =>
  run('redis-cli', ['-u', url, 'ping']).then(
    ({ stdout }) => stdout.trim() === 'PONG',
    () => false,
  );

/** REDIS_URL as given; without it the machine's Redis on 127.0.0.1:6379, or a redis-server started here. */
export async function ensureRedis(given: string | undefined, say: (line: string) => void): Promise<Backing> {
  if (given) return { name: 'Redis', url: given, started: false, stop: async () => {} };
  const url = 'redis://127.0.0.1:6379';
  if (await redisPing(url)) return { name: 'Redis', url, started: false, stop: async () => {} };
  say('starting Redis on 127.0.0.1:6379 (redis-server, nothing saved)');
  const child = spawn('redis-server', ['--bind', '127.0.0.1', '--port', '6379', '--save', '', '--appendonly', 'no'], { detached: true, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('error', (error) => say(`redis-server: ${error.message}`));
  await until('Redis', 30_000, () => redisPing(url));
  return {
    name: 'Redis',
    url,
    started: true,
    stop: async () => {
      say('stopping Redis (started here)');
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
    },
  };
}

const KAFKA_DEFAULT_PORT = 9092;

/**
 * KAFKA_BROKERS as given; without it the broker on 127.0.0.1:KAFKA_PORT (9092), or
 * scripts/kafka-broker.sh's, started here. On 9092 it is the repository's broker (.kafka/broker,
 * as CI starts it); on another port a broker of this start's own, its state in `stateDir` and its
 * controller on KAFKA_CONTROLLER_PORT (default the next port), so it can run beside that one.
 */
export async function ensureKafka(
  root: string,
  options: { given: string | undefined; port: number | undefined; controllerPort: number | undefined; stateDir: string },
  say: (line: string) => void,
): Promise<Backing> {
  if (options.given) return { name: 'Kafka', url: options.given, started: false, stop: async () => {} };
  const port = options.port ?? KAFKA_DEFAULT_PORT;
  const url = `127.0.0.1:${port}`;
  if (await tcpOpen('127.0.0.1', port)) return { name: 'Kafka', url, started: false, stop: async () => {} };
  const env: Record<string, string> =
    port === KAFKA_DEFAULT_PORT
      ? {}
      : { KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(options.controllerPort ?? port + 1), KAFKA_STATE_DIR: options.stateDir };
  say(`starting Kafka on ${url} (scripts/kafka-broker.sh; the first start fetches its jars from Maven Central)`);
  await script(root, 'kafka-broker.sh', 'start', env, say);
  return { name: 'Kafka', url, started: true, stop: () => script(root, 'kafka-broker.sh', 'stop', env, say) };
}

export interface ClickHouseBacking extends Backing {
  /** The same server as the read-only analyst user (deploy/clickhouse/users.d/analyst.xml), database analytics. */
  analystUrl: string | undefined;
  /** The server's pid (one started here), for the state file. */
  pid(): number | undefined;
  /** Starts it again if it is not running (one started here); true when it did. */
  revive(): Promise<boolean>;
}

const CLICKHOUSE_FIRST_PORT = 8123;

/**
 * CLICKHOUSE_URL as given; without it scripts/clickhouse-server.sh's server (clickhouse-local from
 * libchdb.so behind ClickHouse's HTTP handler, not clickhouse-server) with its data under
 * `dataDir`, on CLICKHOUSE_HTTP_PORT (a taken one is an error) or the first free port from 8123.
 */
export async function ensureClickHouse(
  root: string,
  options: { given: string | undefined; dataDir: string; port: number | undefined; analystPassword: string },
  say: (line: string) => void,
): Promise<ClickHouseBacking> {
  if (options.given) {
    return { name: 'ClickHouse', url: options.given, analystUrl: undefined, started: false, stop: async () => {}, pid: () => undefined, revive: async () => false };
  }
  let port = options.port;
  if (port === undefined) {
    for (let p = CLICKHOUSE_FIRST_PORT; p < CLICKHOUSE_FIRST_PORT + 20 && port === undefined; p++) if (await portFree('127.0.0.1', p)) port = p;
    if (port === undefined) throw new Error(`no free port for ClickHouse from ${CLICKHOUSE_FIRST_PORT}: set CLICKHOUSE_HTTP_PORT or CLICKHOUSE_URL`);
  }
  const env = { CLICKHOUSE_HTTP_PORT: String(port), CLICKHOUSE_DATA_DIR: options.dataDir, CLICKHOUSE_ANALYST_PASSWORD: options.analystPassword };
  await script(root, 'clickhouse-server.sh', 'start', env, say);
  const pidFile = join(options.dataDir, 'server.pid');
  const pid = () => {
    try {
      const value = Number(readFileSync(pidFile, 'utf8').trim());
      process.kill(value, 0);
      return value;
    } catch {
      return undefined;
    }
  };
  const analyst = new URL(`http://127.0.0.1:${port}/analytics`);
  analyst.username = 'analyst';
  analyst.password = options.analystPassword;
  return {
    name: 'ClickHouse',
    url: `http://127.0.0.1:${port}`,
    analystUrl: analyst.toString(),
    started: true,
    pid,
    revive: async () => {
      if (pid() !== undefined) return false;
      say('the ClickHouse server is not running: starting it again');
      await script(root, 'clickhouse-server.sh', 'start', env, say);
      return true;
    },
    stop: () => script(root, 'clickhouse-server.sh', 'stop', env, say),
  };
}
