/**
 * What `npm run sql` and `npm run export` share: the target line, the progress line, writing the
 * answer, and turning refusals into a message and an exit code.
 */
import type { SqlTarget } from './target.js';
import { QueryRefused } from './guard.js';
import { QueryFailed } from './run.js';
import { TargetUnavailable } from './target.js';

export function describeTarget(target: SqlTarget): string {
  if (target.kind === 'distributed') return `ClickHouse at ${new URL(target.url).host}`;
  if (target.kind === 'service') return `the running service (pid ${target.endpoint.pid}, ${target.endpoint.url})`;
  return `the embedded warehouse ${target.path} (service stopped)`;
}

/**
 * A progress line on stderr while something runs longer than a second: redrawn in place on a
 * terminal, one line every 10 s otherwise (logs, CI). Returns the function that ends it.
 */
export function startProgress(label: () => string, stream: NodeJS.WriteStream = process.stderr): () => void {
  const started = Date.now();
  const tty = Boolean(stream.isTTY);
  let shown = false;
  const draw = () => {
    const seconds = Math.round((Date.now() - started) / 1000);
    const line = `${label()} ${seconds} s`;
    if (tty) stream.write(`\r\x1b[2K${line}`);
    else if (seconds % 10 === 0) stream.write(`${line}\n`);
    shown = true;
  };
  const timer = setInterval(draw, 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    if (shown && tty) stream.write('\r\x1b[2K');
  };
}

/** A progress bar for `done` of `total`. */
export function bar(done: number, total: number, width = 24): string {
  const filled = total > 0 ? Math.round((done / total) * width) : width;
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total}`;
}

/** Prints why the command could not do its work and gives the exit code: 2 refused, 1 otherwise. */
export function reportFailure(error: unknown): number {
  if (error instanceof QueryRefused) {
    process.stderr.write(`Refused (${error.reason}): ${error.message}\n`);
    return 2;
  }
  if (error instanceof QueryFailed || error instanceof TargetUnavailable) {
    process.stderr.write(`${error.message}\n`);
    return 1;
  }
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}
