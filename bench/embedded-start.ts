/**
 * Embedded start benchmark (npm run bench:embedded). Not a test: it reports what the README's
 * `npm start` costs on a fresh data directory, beside a bare Fastify process started the same way
 * in the same run (these machines are noisy; compare ratios):
 *
 * - time from spawning the process to the first 200 of a click (migrations, demo seed, chDB),
 * - resident memory (VmRSS) after start, and its peak (VmHWM),
 * - resident memory after BENCH_CLICKS clicks (default 100,000) have been acknowledged and have
 *   reached the warehouse (read back through the dashboard endpoint, so nothing is assumed).
 *
 * It fails (exit 1) only when an acknowledged click is missing from the dashboard's numbers.
 * Knobs: BENCH_CLICKS, BENCH_CONNECTIONS (default 20), BENCH_EMBEDDED_ENV (extra KEY=VALUE pairs,
 * comma-separated, given to the service: to compare a setting in the same run).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, startChild, stopChild, type Child } from './processes.js';
import { findWrk, fixedBodySpec, runWrk } from './wrk.js';
import { log } from './output.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOST = '127.0.0.1';
const CLICKS = Number(process.env.BENCH_CLICKS || 100_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 20);
const EXTRA_ENV = Object.fromEntries(
  (process.env.BENCH_EMBEDDED_ENV ?? '')
    .split(',')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);

const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;

/** VmRSS and VmHWM of a process, in KiB (/proc/<pid>/status). */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...extra });

async function firstAnswer(url: string, init: RequestInit, child: Child, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited:\n${child.tail.join('\n')}`);
    const ok = await fetch(url, { ...init, signal: AbortSignal.timeout(2_000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${child.name} gave no 200 within ${limitMs} ms:\n${child.tail.join('\n')}`);
    await sleep(20);
  }
}

async function dashboardClicks(baseUrl: string, token: string): Promise<number> {
  const res = await fetch(`${baseUrl}/api/tracking/performance/1?period=all`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`dashboard answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { data: { clicks: number }[] };
  return body.data.reduce((n, day) => n + day.clicks, 0);
}

async function main() {
  const wrk = findWrk();
  if (!wrk) throw new Error('wrk is not on PATH (Debian: apt-get install wrk)');
  const dir = await mkdtemp(join(tmpdir(), 'ats-embedded-'));
  const children: Child[] = [];
  try {
    // The baseline: a bare Fastify route in a Node process started through the same loader (tsx).
    const started0 = performance.now();
    const baseline = startChild('baseline', ['--import', 'tsx', 'bench/baseline-server.ts'], { cwd: ROOT, env: env({ PORT: '0' }), readyPattern: /^listening (\d+)$/ });
    children.push(baseline);
    const baselinePort = Number((await baseline.readyLine)[1]);
    await firstAnswer(`http://${HOST}:${baselinePort}/baseline`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }, baseline, 30_000);
    const baselineStartMs = performance.now() - started0;
    const baselineMemory = memory(baseline.proc.pid!);
    await stopChild(baseline);

    // The service as `npm start` runs it, on a fresh data directory.
    const port = await freePort();
    const baseUrl = `http://${HOST}:${port}`;
    const started = performance.now();
    const service = startChild('service', ['--import', 'tsx', 'main.ts'], {
      cwd: ROOT,
      env: env({ PORT: String(port), HOST, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn', TRUST_PROXY: '127.0.0.1', ...EXTRA_ENV }),
    });
    children.push(service);
    const clickUrl = `${baseUrl}/api/v1/track/click`;
    const clickBody = JSON.stringify({ affiliate_url: 'https://shop.demo.example/?aff=demo-partner' });
    await firstAnswer(clickUrl, { method: 'POST', body: clickBody, headers: { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.1' } }, service, 120_000);
    const startMs = performance.now() - started;
    await sleep(2_000); // let the start's own work (first relay and load) settle before reading memory
    const afterStart = memory(service.proc.pid!);
    const { dashboardToken } = JSON.parse(await readFile(join(dir, 'data', 'demo-credentials.json'), 'utf8')) as { dashboardToken: string };

    // Clicks until BENCH_CLICKS are acknowledged, each with its own client address.
    let acknowledged = 1; // the first answer above
    let ipBase = 0;
    const clickStart = performance.now();
    while (acknowledged < CLICKS) {
      const run = await runWrk({
        wrk, baseUrl, threads: 1, connections: CONNECTIONS, duration: 5, timeout: 10, ipBase, dir, name: `clicks-${ipBase}`,
        spec: fixedBodySpec('/api/v1/track/click', clickBody, '"click_id":"([^"]+)"', false),
      });
      const ok = run.threads.reduce((n, t) => n + t.ok, 0);
      acknowledged += ok;
      ipBase += run.requests + 1_000;
      if (run.requests - ok > 0) throw new Error(`non-2xx answers to clicks: ${JSON.stringify(run.statuses)}`);
    }
    const clickSeconds = (performance.now() - clickStart) / 1000;
    const loadedBy = Date.now() + 120_000;
    let loaded = await dashboardClicks(baseUrl, dashboardToken);
    while (loaded < acknowledged && Date.now() < loadedBy) {
      await sleep(500);
      loaded = await dashboardClicks(baseUrl, dashboardToken);
    }
    const afterClicks = memory(service.proc.pid!);
    await stopChild(service);

    log(`embedded start on a fresh data directory (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')})${Object.keys(EXTRA_ENV).length ? `, with ${JSON.stringify(EXTRA_ENV)}` : ''}`);
    log(`  baseline (bare Fastify through tsx): first answer ${baselineStartMs.toFixed(0)} ms, RSS ${mib(baselineMemory.rss)}`);
    log(`  service: first click answered ${startMs.toFixed(0)} ms after spawn (${(startMs / baselineStartMs).toFixed(1)}x the baseline)`);
    log(`  service RSS after start: ${mib(afterStart.rss)} (${(afterStart.rss / baselineMemory.rss).toFixed(1)}x the baseline), peak so far ${mib(afterStart.peak)}`);
    log(`  ${acknowledged.toLocaleString('en-US')} clicks acknowledged in ${clickSeconds.toFixed(1)} s (${(acknowledged / clickSeconds).toFixed(0)}/s), ${loaded.toLocaleString('en-US')} in the dashboard's numbers`);
    log(`  service RSS after the clicks: ${mib(afterClicks.rss)} (${(afterClicks.rss / baselineMemory.rss).toFixed(1)}x the baseline), peak ${mib(afterClicks.peak)}`);
    if (loaded < acknowledged) {
      log(`  MISSING: ${acknowledged - loaded} acknowledged clicks not in the dashboard after 120 s`);
      process.exitCode = 1;
    }
  } finally {
    for (const child of children) await stopChild(child, 5_000);
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
