/**
 * The production processes as children: `main.ts relay`, `main.ts loader` and `main.ts ingest`,
 * and the warehouse reader (chDB binds one directory per process, so a run's warehouse is read by
 * a process of its own once its loader stopped).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { log } from '../output.js';
import { freePort, running, startChild, stopChild, waitForHttp, type Child } from '../processes.js';
import { databaseUrl, withTimeout } from '../setup.js';
import type { Bench, PipelineRun } from './lifecycle.js';
import { passedThrough, type PipelineSettings } from './settings.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const HOST = '127.0.0.1';

const baseEnv = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' });

function nodeArgs(settings: PipelineSettings, script: string, ...args: string[]): string[] {
  const prof = settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] : [];
  return [...prof, '--import', 'tsx', script, ...args];
}

export interface Service {
  name: string;
  child: Child;
}

/** A relay or a loader, once it printed that it runs. */
export async function startService(bench: Bench, role: 'relay' | 'loader', name: string, env: Record<string, string>): Promise<Service> {
  const child = startChild(name, nodeArgs(bench.settings, 'main.ts', role), {
    cwd: ROOT,
    env: { ...baseEnv(), KAFKA_BROKERS: bench.settings.brokers.join(','), LOG_LEVEL: 'warn', ...passedThrough(), ...env },
    readyPattern: new RegExp(`Affiliate tracking ${role} running`),
  });
  bench.run.children.push(child);
  try {
    await withTimeout(child.readyLine, 60_000, `starting ${name}`);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${child.tail.join('\n')}`);
  }
  return { name, child };
}

/** A relay reading this run's database: DATABASE_URL is the one setting it needs beyond the loader's. */
export function startRelay(bench: Bench, name: string, env: Record<string, string>): Promise<Service> {
  return startService(bench, 'relay', name, { DATABASE_URL: databaseUrl(bench.settings.adminUrl, bench.run.dbName), ...env });
}

export async function stopService(run: PipelineRun, service: Service | undefined): Promise<void> {
  if (!service) return;
  const result = await stopChild(service.child, 30_000);
  run.children = run.children.filter((c) => c !== service.child);
  if (result.killed || (result.code !== 0 && result.code !== null)) {
    log(`  ${service.name} stopped badly (code ${result.code}, signal ${result.signal}, killed ${result.killed}):\n${service.child.tail.join('\n')}`);
  }
}

export function assertRunning(...services: (Service | undefined)[]) {
  for (const s of services) {
    if (s && !running(s.child)) throw new Error(`${s.name} exited:\n${s.child.tail.join('\n')}`);
  }
}

/** A run's warehouse, read by bench/pipeline/warehouse-reader.ts in a child process. */
export async function readWarehouse<T>(bench: Bench, dir: string, mode: 'summary' | 'clicks'): Promise<T> {
  const { run } = bench;
  const out = join(run.tmpDir, `${mode}-${randomBytes(3).toString('hex')}.json`);
  const child = startChild('warehouse-reader', nodeArgs(bench.settings, 'bench/pipeline/warehouse-reader.ts', dir, mode, out), { cwd: ROOT, env: baseEnv() });
  run.children.push(child);
  const exit = await withTimeout(new Promise<number | null>((resolve) => child.proc.on('exit', resolve)), 120_000, 'reading the warehouse');
  run.children = run.children.filter((c) => c !== child);
  if (exit !== 0) throw new Error(`warehouse reader failed (${exit}):\n${child.tail.join('\n')}`);
  return JSON.parse(await readFile(out, 'utf8')) as T;
}

/** The ingest service (`main.ts ingest`) at its default settings, for the freshness runs. */
export async function startIngest(bench: Bench): Promise<{ ingest: Child; port: number }> {
  const port = await freePort();
  const ingest = startChild('ingest', nodeArgs(bench.settings, 'main.ts', 'ingest'), {
    cwd: ROOT,
    env: {
      ...baseEnv(), DATABASE_URL: databaseUrl(bench.settings.adminUrl, bench.run.dbName), PORT: String(port), HOST, LOG_LEVEL: 'warn', TRUST_PROXY: '127.0.0.1', SEED_DEMO: 'false',
      DATA_DIR: join(bench.run.tmpDir, 'ingest'), SECRETS_KEY: randomBytes(32).toString('base64'),
    },
  });
  bench.run.children.push(ingest);
  await waitForHttp(`http://${HOST}:${port}/healthz`, ingest, 60_000);
  return { ingest, port };
}
