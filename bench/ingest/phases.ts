/**
 * A phase: a warm-up run, the measured run (with the CPU and WAL it cost) and, for the writes, a
 * run at the target rate. A keyed phase spreads its requests over many programs' keys.
 */
import type { Database } from '../../core/db.js';
import { fmt, loadText, log } from '../output.js';
import { exitedChildrenCpuMicros, processCpuMicros } from '../setup.js';
import { luaString, type RequestSpec } from '../wrk.js';
import type { Driver, PhaseSummary } from './driver.js';
import { backendCpu, backendCpuSince, checkpoint, walSince, walSnapshot, type WalStats } from './postgres-stats.js';
import type { IngestSettings } from './settings.js';

export type Stage = 'warmup' | 'measure' | 'paced';

export interface PhaseOptions {
  /** For the WAL counters. */
  db?: Database;
  /** The process answering, whose CPU time is read around the measured run. */
  pid?: number;
  afterRun?: (stage: Stage, run: PhaseSummary) => void;
  /**
   * Then one more run at this rate, open-loop, for the latency at that load: the measured run is
   * closed-loop (every connection sends again as soon as it is answered), so its latency is that of
   * a saturated service and grows with the number of connections, whatever the service does.
   */
  pacedRate?: number;
}

/** The measured run and what it cost per 2xx, in µs of CPU. */
interface Measured {
  measured: PhaseSummary;
  wal: WalStats | undefined;
  /** The answering process (user + system): unlike req/s it hardly moves when others load the machine. */
  cpuPerOk: number | undefined;
  /** The bench database's PostgreSQL backends. */
  pgCpuPerOk: number | undefined;
  /** The load generator. */
  loadCpuPerOk: number | undefined;
}

export interface PhaseResult extends Measured {
  warm: PhaseSummary | undefined;
  paced: PhaseSummary | undefined;
}

/** A load spread over many programs' keys, each request taking one item of its key's pool. */
export interface KeyedLoad {
  path: string;
  /** One program key per pool. */
  keys: string[];
  /** Per key, the values a request may use (JSON strings or numbers as they go into the body). */
  pools: string[][];
  /** Reuse a key's pool from its start when it runs out (sales' clicks); otherwise the last item is reused and answered non-2xx. */
  wrap: boolean;
  /** A Lua expression for the body; `item` is the pool's value (already JSON), STAGE, tid and n as in the other phases. */
  body: string;
  answer: string;
}

export interface Phases {
  /** `requests` is asked for each run just before it starts; `afterRun` sees each run's result. */
  phase(name: string, url: string, requests: (stage: Stage) => RequestSpec, options?: PhaseOptions): Promise<PhaseResult>;
  /**
   * Request s (counted across the warm-up and the measured run) goes to key s % keys with that key's
   * item floor(s / keys). `perKey` counts the requests the script built per key (an upper bound of
   * those sent), for the rate-limit report.
   */
  keyedPhase(name: string, url: string, pid: number | undefined, load: KeyedLoad, perKey: number[], db: Database, pacedRate?: number): Promise<PhaseResult & { exhausted: boolean }>;
}

export function createPhases(driver: Driver, settings: IngestSettings): Phases {
  async function measure(name: string, url: string, spec: RequestSpec, db: Database | undefined, pid: number | undefined): Promise<Measured> {
    log(`  ${name}: measuring ${settings.duration} s, ${settings.connections} connections (machine load average ${loadText()})`);
    const walBefore = await walSnapshot(db);
    const cpuBefore = pid === undefined ? undefined : processCpuMicros(pid);
    const pgBefore = await backendCpu(db);
    const loadBefore = exitedChildrenCpuMicros();
    const measured = await driver.drive(name, url, spec, settings.duration);
    const loadAfter = exitedChildrenCpuMicros();
    const cpuAfter = pid === undefined ? undefined : processCpuMicros(pid);
    const pgUsed = backendCpuSince(pgBefore);
    const walAfter = await walSnapshot(db);
    const perOk = (used: number | undefined) => (used !== undefined && measured.ok > 0 ? used / measured.ok : undefined);
    const cpuPerOk = perOk(cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined);
    const pgCpuPerOk = perOk(pgUsed);
    // wrk is the only child that exits during the run, so the children's CPU that grew is its own.
    const loadCpuPerOk = perOk(loadBefore !== undefined && loadAfter !== undefined ? loadAfter - loadBefore : undefined);
    return { measured, wal: walSince(walBefore, walAfter), cpuPerOk, pgCpuPerOk, loadCpuPerOk };
  }

  function logMeasured(name: string, { measured, cpuPerOk, pgCpuPerOk, loadCpuPerOk }: Measured) {
    log(`  ${name}: ${measured.rps.toFixed(0)} req/s, p50 ${fmt(measured.p50, 1)} ms, p99 ${fmt(measured.p99, 1)} ms, 2xx ${measured.ok}, non-2xx ${measured.non2xx}` +
      `${cpuPerOk === undefined ? '' : `, ${fmt(cpuPerOk, 1)} µs CPU per 2xx`}${pgCpuPerOk === undefined ? '' : ` (PostgreSQL backends ${fmt(pgCpuPerOk, 1)} µs)`}` +
      `${loadCpuPerOk === undefined ? '' : `; load generator ${fmt(loadCpuPerOk, 1)} µs`}`);
  }

  async function atRate(name: string, url: string, spec: RequestSpec, rate: number): Promise<PhaseSummary> {
    log(`  ${name}: ${settings.duration} s at ${fmt(rate)}/s, open loop (machine load average ${loadText()})`);
    const paced = await driver.drive(`${name} at ${fmt(rate)}/s`, url, spec, settings.duration, rate);
    const p = paced.paced;
    log(`  ${name}: ${paced.ok} 2xx of ${fmt(rate * settings.duration)} scheduled` +
      `${p ? `; from the schedule p50 ${fmt(p.p50, 1)} ms, p99 ${fmt(p.p99, 1)} ms; sends behind the schedule p99 ${fmt(p.lagP99, 1)} ms` : ''}`);
    return paced;
  }

  async function phase(name: string, url: string, requests: (stage: Stage) => RequestSpec, { db, pid, afterRun, pacedRate }: PhaseOptions = {}): Promise<PhaseResult> {
    let warm: PhaseSummary | undefined;
    await checkpoint(db);
    if (settings.warmup > 0) {
      log(`  ${name}: warm-up ${settings.warmup} s`);
      warm = await driver.drive(`${name} warm-up`, url, requests('warmup'), settings.warmup);
      afterRun?.('warmup', warm);
    }
    const measured = await measure(name, url, requests('measure'), db, pid);
    afterRun?.('measure', measured.measured);
    logMeasured(name, measured);
    let paced: PhaseSummary | undefined;
    if (pacedRate) {
      paced = await atRate(name, url, requests('paced'), pacedRate);
      afterRun?.('paced', paced);
    }
    return { warm, ...measured, paced };
  }

  async function keyedPhase(name: string, url: string, pid: number | undefined, load: KeyedLoad, perKey: number[], db: Database, pacedRate?: number) {
    const tables = [
      `local AUTH = {\n${load.keys.map((k) => `  ${luaString(`Authorization: Bearer ${k}\r\n`)},`).join('\n')}\n}`,
      `local POOL = {\n${load.pools.map((items) => `  {${items.map((item) => luaString(item)).join(', ')}},`).join('\n')}\n}`,
      'local KEYS = #AUTH',
    ].join('\n');
    let counter = 0;
    const requests = (stage: Stage): RequestSpec => ({
      path: load.path,
      prelude: `local BASE = ${counter}\nlocal STAGE = ${luaString(stage)}\n${tables}`,
      build: [
        '  local s = BASE + i',
        '  local k = s % KEYS + 1',
        '  local pool = POOL[k]',
        '  local j = floor(s / KEYS)',
        `  local item = pool[${load.wrap ? 'j % #pool + 1' : 'math.min(j + 1, #pool)'}]`,
        '  extra = AUTH[k]',
        `  body = ${load.body}`,
      ].join('\n'),
      answer: load.answer,
      collectIds: true,
    });
    const count = (_stage: Stage, run: PhaseSummary) => {
      const base = counter;
      for (const t of run.threads) {
        for (let n = 0; n < t.sent; n++) perKey[(base + n * settings.threads + t.tid) % load.keys.length]!++;
      }
      counter = base + settings.threads * Math.max(0, ...run.threads.map((t) => t.sent));
    };
    const result = await phase(name, url, requests, { db, pid, afterRun: count, ...(pacedRate ? { pacedRate } : {}) });
    const smallestPool = Math.min(...load.pools.map((items) => items.length));
    const exhausted = !load.wrap && Math.ceil(counter / load.keys.length) > smallestPool;
    return { ...result, exhausted };
  }

  return { phase, keyedPhase };
}

/** Every run of a phase: its warm-up, the measured run and the one at the target rate. */
export function runsOf(p: { warm?: PhaseSummary | undefined; measured: PhaseSummary; paced?: PhaseSummary | undefined }): PhaseSummary[] {
  return [p.warm, p.measured, p.paced].filter((run): run is PhaseSummary => run !== undefined);
}

export const okOf = (p: Parameters<typeof runsOf>[0]) => runsOf(p).reduce((n, run) => n + run.ok, 0);
