/**
 * The service's own programs run as processes, as an operator runs them (main.ts, scripts/*.ts):
 * on a data directory and environment of the test's own, from the repository's root.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a script to its end: its exit code and what it printed. */
export function runScript(script: string, args: string[], env: Record<string, string>): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface RunningService {
  process: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  readonly log: string;
  exited: Promise<number | null>;
}

/** Starts the service (main.ts); the caller stops it (process.kill) and awaits `exited`. */
export function startService(env: Record<string, string>): RunningService {
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return {
    process: child,
    get log() {
      return log;
    },
    exited,
  };
}

/** The probe's first defined answer, asked every 200 ms; throws after timeoutMs. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
