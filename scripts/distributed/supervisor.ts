/**
 * The service's processes of `npm run start:distributed`: each one `main.ts <role>` in a process
 * group of its own (a Ctrl-C reaches only the supervisor, which stops them in order), its output
 * appended to a log file, started again when it exits without being asked to (as a container
 * with a restart policy would be), and stopped with SIGTERM, then SIGKILL after a grace period.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessSpec {
  /** ingest-1, relay, loader-2, ... */
  name: string;
  role: 'ingest' | 'relay' | 'loader' | 'webhooks';
  env: Record<string, string>;
  logFile: string;
}

export interface Supervised {
  readonly spec: ProcessSpec;
  /** The pid of the running process (undefined between a crash and its restart). */
  pid(): number | undefined;
  /** How many times it was started again after an exit nobody asked for. */
  restarts(): number;
}

/** The line main.ts prints once the role is up. */
const READY: Record<ProcessSpec['role'], RegExp> = {
  ingest: /Affiliate tracking service listening on/,
  relay: /Affiliate tracking relay running/,
  loader: /Affiliate tracking loader running/,
  webhooks: /Affiliate tracking webhooks running/,
};
const START_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 30_000;
/** Restart delays: doubling from 1 s to at most 10 s, back to 1 s after a minute of running. */
const BACKOFF_MS = [1_000, 2_000, 5_000, 10_000];
const STABLE_MS = 60_000;

interface Entry extends Supervised {
  child: ChildProcess | undefined;
  log: WriteStream;
  stopping: boolean;
  failures: number;
  count: number;
}

export interface Supervisor {
  /** Starts the process; resolves once it printed its ready line, rejects (with its last output) if it exits first. */
  start(spec: ProcessSpec): Promise<Supervised>;
  /** Stops these processes (all started ones by default), in the order given, each drained before the next. */
  stop(names?: readonly string[]): Promise<void>;
  list(): Supervised[];
}

export function createSupervisor(options: { cwd: string; say(line: string): void; onChange(): void }): Supervisor {
  const entries = new Map<string, Entry>();

  function launch(entry: Entry): Promise<void> {
    const { spec } = entry;
    const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', spec.role], {
      cwd: options.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    entry.child = child;
    const startedAt = Date.now();
    const tail: string[] = [];
    let ready = false;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!ready) child.kill('SIGKILL');
      }, START_TIMEOUT_MS);
      const read = (chunk: Buffer) => {
        // Output can arrive after the exit event, when the log is already closed.
        if (!entry.log.writableEnded) entry.log.write(chunk);
        if (ready) return;
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim()) tail.push(line);
          if (tail.length > 30) tail.shift();
          if (READY[spec.role].test(line)) {
            ready = true;
            clearTimeout(timer);
            options.onChange();
            resolve();
          }
        }
      };
      child.stdout!.on('data', read);
      child.stderr!.on('data', read);
      child.on('error', (error) => options.say(`${spec.name}: ${error.message}`));
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        entry.child = undefined;
        options.onChange();
        if (!ready) {
          reject(new Error(`${spec.name} exited (code ${code}, signal ${signal}) before it was ready; its last lines (${spec.logFile}):\n${tail.join('\n')}`));
          return;
        }
        if (entry.stopping) return;
        entry.failures = Date.now() - startedAt > STABLE_MS ? 0 : entry.failures + 1;
        const delay = BACKOFF_MS[Math.min(entry.failures, BACKOFF_MS.length) - 1] ?? BACKOFF_MS[0]!;
        options.say(`${spec.name} exited (code ${code}, signal ${signal}); starting it again in ${delay / 1000} s`);
        void restart(entry, delay);
      });
    });
  }

  async function restart(entry: Entry, delay: number): Promise<void> {
    await sleep(delay);
    while (!entry.stopping) {
      try {
        await launch(entry);
        entry.count += 1;
        options.say(`${entry.spec.name} running again (pid ${entry.child?.pid})`);
        return;
      } catch (error) {
        if (entry.stopping) return;
        options.say(`${(error as Error).message.split('\n')[0]}; trying again in 10 s`);
        await sleep(BACKOFF_MS.at(-1)!);
      }
    }
  }

  async function stopOne(entry: Entry): Promise<void> {
    entry.stopping = true;
    const child = entry.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const graceful = await Promise.race([exited.then(() => true), sleep(STOP_GRACE_MS).then(() => false)]);
      if (!graceful) {
        options.say(`${entry.spec.name} did not stop within ${STOP_GRACE_MS / 1000} s: SIGKILL`);
        child.kill('SIGKILL');
        await Promise.race([exited, sleep(5_000)]);
      }
    }
    await new Promise<void>((resolve) => entry.log.end(resolve));
  }

  return {
    async start(spec) {
      if (entries.has(spec.name)) throw new Error(`${spec.name} is already supervised`);
      const entry: Entry = {
        spec,
        child: undefined,
        log: createWriteStream(spec.logFile, { flags: 'a' }).on('error', (error) => options.say(`${spec.logFile}: ${error.message}`)),
        stopping: false,
        failures: 0,
        count: 0,
        pid: () => entry.child?.pid,
        restarts: () => entry.count,
      };
      entries.set(spec.name, entry);
      await launch(entry);
      return entry;
    },
    async stop(names) {
      const order = names ?? [...entries.keys()];
      for (const name of order) {
        const entry = entries.get(name);
        if (entry && !entry.stopping) await stopOne(entry);
      }
    },
    list: () => [...entries.values()],
  };
}
