/**
 * The distributed topology of `npm run start:distributed` (scripts/distributed.ts), started as a
 * process for a test: its own Postgres database (ats_test_<hex>), Kafka topics and consumer group
 * (ats_test_<hex>.), data directory and ClickHouse server (scripts/clickhouse-server.sh on a free
 * port, data under the data directory), on the machine's Postgres, Redis and Kafka broker.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase, type Database } from '../../core/db.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { dropTestDatabase } from './databases.js';
import { dropTestTopics } from './kafka.js';

const ROOT = join(import.meta.dirname, '../..');
const BANNER_END = 'Ctrl-C stops everything started here.';

/** <DATA_DIR>/distributed.json, as scripts/distributed/topology.ts writes it. */
export interface TopologyState {
  pid: number;
  processes: Record<string, { pid: number | null; restarts?: number }>;
  ingest: string[];
  clickhouse: string;
}

export interface RunningTopology {
  child: ChildProcess;
  dataDir: string;
  ingest: string[];
  /** The server's default user (full rights), database default. */
  clickhouseUrl: string;
  /** The read-only analyst user of deploy/clickhouse/users.d/analyst.xml. */
  analystUrl: string;
  databaseUrl: string;
  /** Pools of the test's own on the topology's stores. */
  db: Database;
  warehouse: Warehouse;
  state(): TopologyState;
  /** Everything start:distributed printed so far. */
  output(): string;
  /** SIGTERM, as Ctrl-C would; resolves with the exit once it is over. */
  stop(): Promise<{ code: number | null; signal: string | null }>;
  /** Stops it if still running and removes the database, topics, group and data directory. */
  cleanup(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Two consecutive free ports (ingest-1 on PORT, ingest-2 on PORT+1). */
async function freePortPair(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    if (port < 65534 && (await portFree(port + 1))) return port;
  }
  throw new Error('no two consecutive free ports');
}

export async function startDistributed(options: { brokers: string[]; adminUrl: string; redisUrl: string }): Promise<RunningTopology> {
  const id = randomBytes(5).toString('hex');
  const dataDir = await mkdtemp(join(tmpdir(), 'ats-distributed-'));
  const dbName = `ats_test_${id}`;
  const url = new URL(options.adminUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const kafka = { brokers: options.brokers, client: 'kafkajs' as const, clientId: `ats-test-${id}`, topicPrefix: `ats_test_${id}.`, topics: { partitions: 3, replicationFactor: 1 }, groupId: `ats_test_loader_${id}` };
  const webhooksGroup = `ats_test_webhooks_${id}`;
  const port = await freePortPair();
  const clickhousePort = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/distributed.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir,
      DISTRIBUTED_DATABASE_URL: databaseUrl, REDIS_URL: options.redisUrl, KAFKA_BROKERS: options.brokers.join(','),
      CLICKHOUSE_HTTP_PORT: String(clickhousePort), KAFKA_TOPIC_PREFIX: kafka.topicPrefix, LOADER_GROUP_ID: kafka.groupId,
      WEBHOOKS_GROUP_ID: webhooksGroup,
      // The tests send each journey from an address of its own (X-Forwarded-For), as clients behind one proxy.
      TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'warn', LOADER_FLUSH_MS: '100',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null }));
  let db: Database | undefined;
  let warehouse: Warehouse | undefined;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  const cleanup = async () => {
    await warehouse?.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await Promise.race([stop(), sleep(120_000)]);
    await dropTestDatabase(dbName).catch(() => undefined);
    await dropTestTopics(kafka).catch(() => undefined);
    // The webhooks process's group, on topics already gone.
    await dropTestTopics({ ...kafka, groupId: webhooksGroup }).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 240_000;
    while (!output.includes(BANNER_END)) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`start:distributed exited:\n${output}`);
      if (Date.now() > deadline) throw new Error(`start:distributed printed no banner within 240 s:\n${output}`);
      await sleep(200);
    }
    const clickhouseUrl = `http://127.0.0.1:${clickhousePort}`;
    db = await openDatabase({ kind: 'postgres', url: databaseUrl, poolSize: 4 });
    warehouse = await openWarehouse({ kind: 'http', url: clickhouseUrl });
    return {
      child, dataDir, databaseUrl, clickhouseUrl, db, warehouse,
      ingest: [`http://127.0.0.1:${port}`, `http://127.0.0.1:${port + 1}`],
      analystUrl: `http://analyst:analyst@127.0.0.1:${clickhousePort}/analytics`,
      state: () => JSON.parse(readFileSync(join(dataDir, 'distributed.json'), 'utf8')) as TopologyState,
      output: () => output,
      stop,
      cleanup,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** Whether a pid is a live process. */
export function alive(pid: number | null | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
