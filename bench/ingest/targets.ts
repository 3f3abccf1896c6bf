/** What the ingest benchmark holds its figures against, and the service limits its load stays under. */
import { availableParallelism } from 'node:os';
import { fmt } from '../output.js';
import type { PhaseSummary } from './driver.js';
import type { IngestSettings } from './settings.js';

/** The service's limits the load must stay under (ingest/tracking/route-deps.ts and the route modules beside it). */
export const SALE_LIMIT_PER_KEY_PER_MIN = 120;
/**
 * Sales planned per key: sales and then refunds share the key's limit, and both phases may fall into
 * one minute window, so each gets under half of it.
 */
export const SALES_PER_KEY = 55;
/** Programs (each with its key) the sales and refunds rotate over; seeding them takes about 7 s a thousand. */
export const MAX_PROGRAMS = 2_000;

/** Issue 2's click targets. */
export const TARGET_CLICKS_PER_S = 5_000;
export const TARGET_P99_MS = 50;
/** Issue 14's: clicks at least half the bare route; sales, leads and refunds each at these figures. */
export const TARGET_CLICKS_X_BASELINE = 0.5;
export const TARGET_WRITE_PER_S = 3_000;
export const TARGET_WRITE_P99_MS = 30;
export const TARGET_WRITE_CPU_US = 200;

/** Requests a write phase's run at the target rate schedules, with a margin. */
export const pacedRequests = (settings: IngestSettings) => TARGET_WRITE_PER_S * (settings.duration + 1) * 1.1;

/**
 * The p99 at the target rate, when the run kept its schedule: at least 98 % of the scheduled requests
 * answered 2xx and none other (one that falls behind is not at that rate, and its requests wait to
 * be sent).
 */
export function pacedP99(run: PhaseSummary | undefined): number | undefined {
  const l = run?.paced;
  if (!run || !l || run.non2xx > 0 || l.count < 0.98 * l.rate * run.duration) return undefined;
  return l.p99;
}

/** What a phase spent per 2xx, in µs of CPU: the answering process, its PostgreSQL backends and wrk. */
export interface CpuPerRequest {
  cpuPerOk?: number | undefined;
  pgCpuPerOk?: number | undefined;
  loadCpuPerOk?: number | undefined;
}

/**
 * The most clicks a second the machine's cores could answer at this run's CPU per click (service,
 * PostgreSQL backends and load generator), with every core busy all the time, beside what the
 * ratio target asks: no tuning of waits or batch sizes reaches a rate above this line, only less
 * CPU per click does.
 */
export function clickCeiling(click: CpuPerRequest, baseRps: number): string | undefined {
  const { cpuPerOk, pgCpuPerOk, loadCpuPerOk } = click;
  if (cpuPerOk === undefined || pgCpuPerOk === undefined || loadCpuPerOk === undefined) return undefined;
  const cores = availableParallelism();
  const total = cpuPerOk + pgCpuPerOk + loadCpuPerOk;
  const ceiling = (cores * 1e6) / total;
  const targetRps = TARGET_CLICKS_X_BASELINE * baseRps;
  return `click ceiling: ${cores} cores always busy at this run's ${fmt(total, 1)} µs per click (service ${fmt(cpuPerOk, 1)} + ` +
    `PostgreSQL backends ${fmt(pgCpuPerOk, 1)} + load generator ${fmt(loadCpuPerOk, 1)}) answer at most ${fmt(ceiling)}/s = ` +
    `${(ceiling / baseRps).toFixed(2)} x baseline; ${TARGET_CLICKS_X_BASELINE} x (${fmt(targetRps)}/s) needs at most ${fmt((cores * 1e6) / targetRps, 1)} µs per click in all`;
}
