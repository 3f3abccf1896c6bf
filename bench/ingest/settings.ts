/** The ingest benchmark's knobs (see bench/ingest.ts) and its load generator. */
import { DEFAULT_ADMIN_URL, intSetting } from '../setup.js';
import { findWrk } from '../wrk.js';

/** Requests taking longer than this are counted as timeouts by wrk (their latency is not recorded). */
export const REQUEST_TIMEOUT_S = 10;

export interface IngestSettings {
  adminUrl: string;
  duration: number;
  warmup: number;
  connections: number;
  threads: number;
  clickPool: number;
  writePool: number;
  cpuProfDir: string | undefined;
  phases: 'all' | 'click';
  rounds: number;
}

export function readSettings(): IngestSettings {
  const phases = process.env.BENCH_PHASES || 'all';
  const settings = {
    adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
    duration: intSetting('BENCH_DURATION', 10, 1, 60),
    warmup: intSetting('BENCH_WARMUP', 2, 0, 30),
    connections: intSetting('BENCH_CONNECTIONS', 50, 1, 500),
    threads: intSetting('BENCH_THREADS', 1, 1, 8),
    clickPool: intSetting('BENCH_CLICK_POOL', 3_000, 100, 20_000),
    writePool: intSetting('BENCH_WRITE_POOL', 0, 0, 500_000),
    cpuProfDir: process.env.BENCH_CPU_PROF || undefined,
    phases: phases as IngestSettings['phases'],
    rounds: intSetting('BENCH_ROUNDS', 1, 1, 10),
  };
  if (phases !== 'all' && phases !== 'click') throw new Error('BENCH_PHASES must be all or click');
  if (settings.connections % settings.threads !== 0) {
    // wrk gives each thread connections / threads (rounded down).
    throw new Error(`BENCH_CONNECTIONS (${settings.connections}) must be a multiple of BENCH_THREADS (${settings.threads})`);
  }
  return settings;
}

/** The load generator; checked before anything is created. */
export function wrkOrExit(): string {
  const path = findWrk();
  if (path) return path;
  process.stderr.write('wrk not found: apt-get install wrk\n');
  process.exit(2);
}
