/** The service (main.ts, ingest role) and the bare Fastify baseline, each in its own process. */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { log } from '../output.js';
import { freePort, startChild, waitForHttp, type Child } from '../processes.js';
import { withTimeout } from '../setup.js';
import type { IngestSettings } from './settings.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HOST = '127.0.0.1';

export interface Services {
  service: Child;
  serviceUrl: string;
  baseline: Child;
  baselineUrl: string;
}

/** Starts both; each child is handed to `started` as soon as it exists, so cleanup stops it whatever happens next. */
export async function startServices(settings: IngestSettings, dbUrl: string, started: (child: Child) => void): Promise<Services> {
  const nodeArgs = (script: string) => [...(settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] : []), '--import', 'tsx', script];
  const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
  const servicePort = await freePort();
  const service = startChild('service', nodeArgs('main.ts'), {
    cwd: ROOT,
    env: {
      ...baseEnv,
      DATABASE_URL: dbUrl,
      // The distributed ingest refuses to start without it (issue 27).
      SECRETS_KEY: randomBytes(32).toString('base64'),
      PORT: String(servicePort),
      HOST,
      LOG_LEVEL: 'warn',
      TRUST_PROXY: '127.0.0.1',
      SEED_DEMO: 'false',
      DATABASE_POOL_SIZE: '20',
      // The ingest role only, as in the distributed mode; said explicitly because with all roles
      // (and no KAFKA_BROKERS) this process would also relay every click into chDB: about as much
      // CPU again as ingesting it, the relay's cost rather than the ingest path's.
      SERVICE: 'ingest',
    },
  });
  started(service);
  const baseline = startChild('baseline', ['--import', 'tsx', 'bench/baseline-server.ts'], {
    cwd: ROOT,
    env: { ...baseEnv, PORT: '0' },
    readyPattern: /^listening (\d+)$/,
  });
  started(baseline);
  const serviceUrl = `http://${HOST}:${servicePort}`;
  await waitForHttp(`${serviceUrl}/healthz`, service, 30_000);
  const baselinePort = Number((await withTimeout(baseline.readyLine, 30_000, 'starting the baseline'))[1]);
  const baselineUrl = `http://${HOST}:${baselinePort}`;
  log(`service on ${serviceUrl} (pid ${service.proc.pid}), baseline on ${baselineUrl} (pid ${baseline.proc.pid})`);
  return { service, serviceUrl, baseline, baselineUrl };
}
