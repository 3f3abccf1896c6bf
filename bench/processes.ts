import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A child process of the benchmark with the tail of its output, for diagnostics. */
export interface Child {
  name: string;
  proc: ChildProcess;
  /** Last lines of stdout and stderr, interleaved. */
  tail: string[];
  /** Resolves with the first stdout line matching the pattern given to startChild, if any. */
  readyLine: Promise<RegExpExecArray>;
}

const TAIL_LINES = 40;

export function startChild(name: string, args: string[], options: { cwd: string; env: Record<string, string>; readyPattern?: RegExp }): Child {
  const proc = spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  let resolveReady: (m: RegExpExecArray) => void = () => {};
  let rejectReady: (e: Error) => void = () => {};
  const readyLine = new Promise<RegExpExecArray>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  readyLine.catch(() => {}); // only awaited when a pattern was given
  const collect = (stream: 'out' | 'err') => (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      tail.push(`[${name} ${stream}] ${line}`);
      if (tail.length > TAIL_LINES) tail.shift();
      const m = stream === 'out' && options.readyPattern ? options.readyPattern.exec(line) : null;
      if (m) resolveReady(m);
    }
  };
  proc.stdout!.on('data', collect('out'));
  proc.stderr!.on('data', collect('err'));
  proc.on('exit', (code, signal) => rejectReady(new Error(`${name} exited (code ${code}, signal ${signal}) before it was ready`)));
  proc.on('error', (error) => rejectReady(error));
  return { name, proc, tail, readyLine };
}

export const running = (child: Child) => child.proc.exitCode === null && child.proc.signalCode === null;

/** SIGTERM, wait up to graceMs for the exit, then SIGKILL. Bounded. */
export async function stopChild(child: Child, graceMs = 10_000): Promise<{ code: number | null; signal: string | null; killed: boolean }> {
  if (!running(child)) return { code: child.proc.exitCode, signal: child.proc.signalCode, killed: false };
  const exited = once(child.proc, 'exit');
  child.proc.kill('SIGTERM');
  const graceful = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
  if (!graceful && running(child)) {
    child.proc.kill('SIGKILL');
    await Promise.race([exited, sleep(2_000)]);
  }
  return { code: child.proc.exitCode, signal: child.proc.signalCode, killed: !graceful };
}

/** A port free on loopback right now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!port) throw new Error('could not obtain a free port');
  return port;
}

/** Polls url until it answers 200, the child exits, or timeoutMs passes. */
export async function waitForHttp(url: string, child: Child, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!running(child)) throw new Error(`${child.name} exited before answering ${url}:\n${child.tail.join('\n')}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms:\n${child.tail.join('\n')}`);
}
