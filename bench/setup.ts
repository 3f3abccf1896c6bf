/**
 * What the ingest benchmarks share: a throw-away PostgreSQL database, the seed program, and the
 * CPU time a process has used (the figure that stays meaningful on a busy machine).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Database } from '../core/db.js';
import { systemContext } from '../domain/audit/audit.js';
import { issueProgramKey } from '../domain/programs/api-keys.js';
import { createPartner, createProgram, type ProgramSettings } from '../domain/programs/programs.js';

export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const BENCH_DATABASE = /^ats_bench_[a-z0-9]+$/;

/** An integer knob from the environment, within [min, max]; the fallback when unset. */
export function intSetting(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what} took more than ${ms} ms`)))]);
}

export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    await withTimeout(admin.query(text), 30_000, text);
  } finally {
    await admin.end();
  }
}

/** Creates ats_bench_<name>; refuses any other name. */
export async function createBenchDatabase(adminUrl: string, name: string): Promise<void> {
  if (!BENCH_DATABASE.test(name)) throw new Error(`refusing to create ${name}: not a benchmark database name`);
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
}

/** Destructive: refuses any name that is not a benchmark database. */
export async function dropBenchDatabase(adminUrl: string, name: string): Promise<void> {
  if (!BENCH_DATABASE.test(name)) throw new Error(`refusing to drop ${name}: not a benchmark database`);
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

export interface SeededProgram {
  programId: number;
  apiKey: string;
  affCode: string;
}

function programSettings(name: string, commissionType: ProgramSettings['commission_type']): ProgramSettings {
  return {
    name,
    domain: 'shop.bench.example',
    commission_type: commissionType,
    commission_rate: 10,
    attribution_window_days: 60,
    lead_auth: 'server_required',
    paymentTrackingMode: 's2s',
    allowed_origins: [],
  };
}

/**
 * A program with its key, one partner and that partner's referral link (aff code bench-<label>
 * unless given); 10 % commission, percent unless another type is given.
 */
export async function seedProgram(
  db: Database,
  workspaceId: number,
  label: string,
  options: { commissionType?: ProgramSettings['commission_type']; affCode?: string } = {},
): Promise<SeededProgram> {
  const program = await createProgram(db, workspaceId, programSettings(`Bench program ${label}`, options.commissionType ?? 'percent'), systemContext('bench'));
  const { apiKey } = await issueProgramKey(db, program.id);
  const affCode = options.affCode ?? `bench-${label}`;
  const partner = await createPartner(db, program.id, { name: `Bench partner ${label}`, email: `partner-${label}@bench.example`, affCode }, systemContext('bench'));
  return { programId: program.id, apiKey, affCode: partner.affCode };
}

/** Linux reports process times in clock ticks of 1/100 s (USER_HZ; `getconf CLK_TCK`). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system, every thread) another process has used so far, in µs, from
 * /proc/<pid>/stat; undefined where that file is missing (not Linux, or the process is gone).
 * Resolution is one tick (10 ms): good for runs that burn seconds of CPU.
 */
export function processCpuMicros(pid: number): number | undefined {
  return statCpuMicros(`/proc/${pid}/stat`, 11);
}

/**
 * CPU time (user + system) of this process's children that have exited and been waited for, in µs
 * (cutime and cstime of /proc/self/stat). Taken around a load generator's run while the other
 * children still run, the difference is that load generator's CPU.
 */
export function exitedChildrenCpuMicros(): number | undefined {
  return statCpuMicros('/proc/self/stat', 13);
}

/** utime + stime (or, from field 16 on, cutime + cstime) of a stat file, in µs. */
function statCpuMicros(path: string, firstField: 11 | 13): number | undefined {
  try {
    const stat = readFileSync(path, 'utf8');
    // The command name (field 2) is in parentheses and may contain spaces: count from after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const user = Number(fields[firstField]); // field 14 (utime) or 16 (cutime)
    const system = Number(fields[firstField + 1]); // field 15 (stime) or 17 (cstime)
    if (!Number.isFinite(user) || !Number.isFinite(system)) return undefined;
    return ((user + system) * 1e6) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
