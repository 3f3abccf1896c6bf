/**
 * `npm run start:distributed`: the distributed mode on one machine, without Docker. PostgreSQL and
 * Redis (the machine's, or started if missing), the Kafka broker (scripts/kafka-broker.sh), the
 * ClickHouse HTTP server (scripts/clickhouse-server.sh: clickhouse-local from chDB's libchdb.so
 * behind ClickHouse's HTTP handler, not clickhouse-server), two ingest processes on PORT and
 * PORT+1, one relay, two loaders in one consumer group and the outgoing webhooks' process. The
 * demo workspace's credentials go to <DATA_DIR>/demo-credentials.json, as on the embedded start.
 * Ctrl-C (SIGINT) or SIGTERM stops everything it started, in order, and nothing it did not.
 *
 * Environment (all optional): PORT (3000), HOST (127.0.0.1), DATA_DIR (data/distributed),
 * DISTRIBUTED_DATABASE_URL (postgres://postgres@127.0.0.1:5432/ats_distributed: a database of its
 * own, created if missing, never the tests'), REDIS_URL, KAFKA_BROKERS, CLICKHOUSE_URL (each used
 * as given; unset, the local one is found or started), KAFKA_PORT (9092: the broker looked for, or
 * started with its state in <DATA_DIR>/kafka when not 9092; KAFKA_CONTROLLER_PORT, default the next
 * port), CLICKHOUSE_HTTP_PORT (the server started
 * here; unset, the first free port from 8123), CLICKHOUSE_ANALYST_PASSWORD (analyst), SECRETS_KEY
 * (unset: <DATA_DIR>/secrets.key, made once). Everything else (LOG_LEVEL, TRUST_PROXY,
 * KAFKA_TOPIC_PREFIX, LOADER_GROUP_ID, ...) reaches the processes as it is.
 */
import { fileURLToPath } from 'node:url';
import { demoBannerLines } from '../domain/demo.js';
import { INGEST_PROCESSES, LOADER_PROCESSES } from './distributed/environment.js';
import { startTopology, STATE_FILE, type Topology } from './distributed/topology.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const say = (line: string) => process.stdout.write(`start:distributed: ${line}\n`);

/** A URL as printed: the password (if any) masked. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password && parsed.username !== 'analyst') parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

/** The processes run no OpenID provider of their own (the embedded start's): the token, or OIDC_ISSUER's sign-in. */
function signIn(url: string, issuer: string | undefined): string {
  if (issuer) return `owner@demo.example through ${issuer} at ${url}/dashboard`;
  return `the demo dashboard token at ${url}/dashboard (no OpenID provider runs without OIDC_ISSUER)`;
}

function banner(topology: Topology): string {
  const [postgres, redis, kafka, clickhouse] = topology.backing;
  const origin = (b: { started: boolean }) => (b.started ? 'started here' : 'already running; left alone');
  const [first] = topology.ingestUrls;
  const lines = [
    '',
    'Affiliate tracking service, distributed mode (no Docker)',
    ...topology.ingestUrls.map((url, i) => `  ingest ${i + 1}:     ${url}   (dashboard ${url}/dashboard, OpenAPI ${url}/openapi.json)`),
    `  relay:        1 process; loaders: ${LOADER_PROCESSES} processes in consumer group ${topology.loaderGroup}; outgoing webhooks: 1 process`,
    `  Postgres:     ${shown(postgres!.url)} (${origin(postgres!)})`,
    `  Redis:        ${shown(redis!.url)} (${origin(redis!)}); rate limits shared by the ${INGEST_PROCESSES} ingest processes`,
    `  Kafka:        ${kafka!.url} (${origin(kafka!)})`,
    `  ClickHouse:   ${shown(clickhouse!.url)} (${clickhouse!.started ? 'clickhouse-local from libchdb.so serving HTTP, not clickhouse-server; started here' : 'already running; left alone'})`,
    ...(topology.clickhouse.analystUrl
      ? [`  analysts:     CLICKHOUSE_URL=${topology.clickhouse.analystUrl} npm run sql -- "SELECT count() FROM analytics.clicks"`]
      : []),
    `  logs:         ${topology.dataDir}/logs/ (pids in ${topology.dataDir}/${STATE_FILE})`,
    ...(topology.demo ? demoBannerLines(first!, topology.demo, signIn(first!, topology.oidcIssuer)) : []),
    '',
    'Ctrl-C stops everything started here.',
    '',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  say('starting');
  const running: { topology?: Topology } = {};
  let signalled: string | undefined;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    // A signal during the start is handled once the start is over: then its parts are known.
    if (!running.topology) return;
    say(`${signal}: stopping what was started here`);
    running.topology.stop().then(
      () => {
        say('stopped');
        process.exit(0);
      },
      (error: Error) => {
        say(`stop failed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  const topology = await startTopology({ root: ROOT, env: process.env, say });
  running.topology = topology;
  if (signalled) {
    const signal = signalled;
    signalled = undefined;
    shutdown(signal);
    return;
  }
  process.stdout.write(`${banner(topology)}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`start:distributed: ${error.message}\n`);
  process.exit(1);
});
