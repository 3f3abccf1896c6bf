/**
 * CPU time of the processes a run involves (relay, loader, ingest, the broker, the database's
 * backends) and of the whole machine: the figures that stay meaningful on a busy machine.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { sql, type Database } from '../../core/db.js';
import { fmtFinite as fmt, loadText, ratio } from '../output.js';
import type { Child } from '../processes.js';
import { processCpuMicros } from '../setup.js';
import { ROOT } from './services.js';

const backends = sql('bench.pipeline_backends', `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);

/** user + system CPU of a process so far, in ms (/proc/<pid>/stat, 10 ms ticks); undefined when gone. */
function processCpuMs(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  const micros = processCpuMicros(pid);
  return micros === undefined ? undefined : micros / 1000;
}

/** Busy and total jiffies of the whole machine (everyone's work, not only ours). */
function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  return { busy: total - idle, total };
}

/** The local broker's process (scripts/kafka-broker.sh writes its pid). */
function brokerPid(): number | undefined {
  try {
    return Number(readFileSync(join(ROOT, '.kafka', 'broker.pid'), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/** CPU of the Postgres backends serving this database (the relay's connections and ours). */
async function postgresCpuMs(db: Database): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  for (const { pid } of await db.many<{ pid: number }>(backends)) {
    const ms = processCpuMs(pid);
    if (ms !== undefined) cpu.set(pid, ms);
  }
  return cpu;
}

/** CPU snapshot of the processes a run involves (children, and others by pid); cpuUse gives the deltas. */
export async function cpuSnapshot(db: Database, children: Record<string, Child | undefined>, others: Record<string, number | undefined> = {}) {
  const ms: Record<string, number | undefined> = {};
  for (const [name, child] of Object.entries(children)) ms[name] = processCpuMs(child?.proc.pid);
  for (const [name, pid] of Object.entries(others)) ms[name] = processCpuMs(pid);
  ms.broker = processCpuMs(brokerPid());
  return { at: performance.now(), ms, postgres: await postgresCpuMs(db), machine: machineTicks() };
}
type CpuSnapshot = Awaited<ReturnType<typeof cpuSnapshot>>;

export interface CpuUse {
  /** CPU ms per process name, over the interval. */
  ms: Record<string, number>;
  /** Share of the whole machine that was busy (everyone), 0..1. */
  machineBusy: number;
  seconds: number;
}

export function cpuUse(before: CpuSnapshot, after: CpuSnapshot): CpuUse {
  const ms: Record<string, number> = {};
  for (const name of Object.keys(after.ms)) {
    const a = after.ms[name];
    const b = before.ms[name];
    if (a !== undefined && b !== undefined) ms[name] = a - b;
  }
  let pgMs = 0;
  for (const [pid, a] of after.postgres) pgMs += a - (before.postgres.get(pid) ?? 0);
  ms.postgres = pgMs;
  const total = after.machine.total - before.machine.total;
  return { ms, machineBusy: total > 0 ? (after.machine.busy - before.machine.busy) / total : 0, seconds: (after.at - before.at) / 1000 };
}

export const perThousand = (ms: number | undefined, events: number) => (ms === undefined || events === 0 ? Number.NaN : (ms / events) * 1000);

export function cpuLine(use: CpuUse, events: number, names: string[]): string {
  const parts = names.filter((n) => use.ms[n] !== undefined).map((n) => `${n} ${fmt(perThousand(use.ms[n], events), 1)}`);
  return `CPU ms per 1,000 events: ${parts.join(', ')} (machine ${fmt(use.machineBusy * 100)} % busy over ${fmt(use.seconds, 1)} s, load ${loadText()})`;
}

/**
 * The most events a second the machine's cores could carry at a run's CPU per event (the processes
 * named), with every core busy all the time, beside what a ratio target asks: no tuning of waits
 * or batch sizes reaches a rate above this line, only less CPU per event does.
 */
export function ceilingLine(cpu: CpuUse, names: string[], events: number, baseRate: number, targetX: number): string {
  const cores = availableParallelism();
  // A process whose CPU could not be read is left out and named: the ceiling is then too high.
  const measured = names.filter((name) => cpu.ms[name] !== undefined);
  const missing = names.filter((name) => cpu.ms[name] === undefined);
  const perThousandMs = measured.reduce((sum, name) => sum + perThousand(cpu.ms[name], events), 0);
  const ceiling = (cores * 1e6) / perThousandMs;
  return `ceiling: ${cores} cores always busy at this run's ${fmt(perThousandMs, 1)} ms per 1,000 events (${measured.join(' + ')}` +
    `${missing.length ? `; not read: ${missing.join(', ')}` : ''}) carry at most ` +
    `${fmt(ceiling)}/s = ${ratio(ceiling, baseRate)}; ${targetX.toFixed(2)}x (${fmt(targetX * baseRate)}/s) needs at most ` +
    `${fmt((cores * 1e6) / (targetX * baseRate), 1)} ms per 1,000 in all`;
}
