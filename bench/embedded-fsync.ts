/**
 * What durable embedded Postgres costs (npx tsx bench/embedded-fsync.ts, or npm run bench:fsync).
 * The real service (buildApp over inject(), no network) on two fresh PGlite data directories in
 * this one run: EMBEDDED_FSYNC on (Postgres's fsync at each commit, the default) and off. It
 * measures clicks sent 50 at a time (the click writer commits the ones that arrive together in
 * one statement, so they share a sync) and sales sent one after another (a commit each), and
 * prints each rate and the ratio on / off. Rounds alternate the two, the median round counts.
 *
 * Knobs: BENCH_ROUNDS (default 3), BENCH_CLICKS (per round, default 2000), BENCH_SALES (per round,
 * default 300), BENCH_DIR (where the data directories go; default the OS temp directory: put it
 * on the disk the service will use, since the cost is the disk's).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { openDatabase, type Database } from '../core/db.js';
import { createLogger } from '../core/log.js';
import { migrate } from '../core/migrate.js';
import { buildApp } from '../ingest/app.js';
import { createWorkspace } from '../domain/access/workspaces.js';
import type { RateLimitStore } from '../ingest/http/rate-limit.js';
import { seedProgram, type SeededProgram } from './setup.js';

const setting = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const ROUNDS = setting('BENCH_ROUNDS', 3);
const CLICKS = setting('BENCH_CLICKS', 2000);
const SALES = setting('BENCH_SALES', 300);
const CONCURRENCY = 50;

const unlimited: RateLimitStore = { hit: () => 1, close: async () => {} };

interface Subject {
  label: 'on' | 'off';
  db: Database;
  app: FastifyInstance;
  program: SeededProgram;
}

async function subject(label: 'on' | 'off', dir: string): Promise<Subject> {
  const db = await openDatabase({ kind: 'pglite', dataDir: join(dir, label), durable: label === 'on' });
  await migrate(db);
  const program = await seedProgram(db, await createWorkspace(db, `fsync ${label}`), label);
  const app = await buildApp({
    db,
    rateLimits: unlimited,
    logger: createLogger('silent'),
    trustProxy: false,
    tracking: { platformFeeBps: 2000, docsBaseUrl: 'https://docs.example' },
  });
  await app.ready();
  return { label, db, app, program };
}

let sequence = 0;
async function clicksPerSecond(s: Subject): Promise<number> {
  const body = { affiliate_url: `https://shop.bench.example/?aff=${s.program.affCode}` };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CLICKS) {
        next += 1;
        const res = await s.app.inject({ method: 'POST', url: '/api/v1/track/click', payload: body });
        if (res.statusCode !== 200) throw new Error(`click ${res.statusCode}: ${res.body}`);
      }
    }),
  );
  return CLICKS / ((performance.now() - started) / 1000);
}

async function salesPerSecond(s: Subject): Promise<number> {
  const headers = { authorization: `Bearer ${s.program.apiKey}` };
  const started = performance.now();
  for (let i = 0; i < SALES; i++) {
    sequence += 1;
    const payload = { transaction_id: `fsync-${s.label}-${sequence}`, additional_data: { test_mode: true } };
    const res = await s.app.inject({ method: 'POST', url: '/api/v1/track/sale', headers, payload });
    if (res.statusCode !== 200) throw new Error(`sale ${res.statusCode}: ${res.body}`);
  }
  return SALES / ((performance.now() - started) / 1000);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  const dir = await mkdtemp(join(process.env.BENCH_DIR ?? tmpdir(), 'ats-fsync-'));
  const subjects = [await subject('on', dir), await subject('off', dir)];
  const figures = { on: { clicks: [] as number[], sales: [] as number[] }, off: { clicks: [] as number[], sales: [] as number[] } };
  try {
    for (const s of subjects) await clicksPerSecond(s); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? subjects : [...subjects].reverse();
      for (const s of order) {
        figures[s.label].clicks.push(await clicksPerSecond(s));
        figures[s.label].sales.push(await salesPerSecond(s));
      }
    }
  } finally {
    for (const s of subjects) {
      await s.app.close();
      await s.db.close();
    }
    await rm(dir, { recursive: true, force: true });
  }
  const line = (what: 'clicks' | 'sales') => {
    const on = median(figures.on[what]);
    const off = median(figures.off[what]);
    return `${what.padEnd(6)}  fsync on ${on.toFixed(0).padStart(6)}/s   off ${off.toFixed(0).padStart(6)}/s   on/off ${(on / off).toFixed(2)}`;
  };
  console.log(`embedded PGlite, ${ROUNDS} rounds (median), ${CLICKS} clicks at ${CONCURRENCY} concurrent, ${SALES} sales one at a time`);
  console.log(line('clicks'));
  console.log(line('sales'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
