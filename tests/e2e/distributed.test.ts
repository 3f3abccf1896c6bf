/**
 * The distributed mode as users start it: `npm run start:distributed` (scripts/distributed.ts) as a
 * process, with two ingest processes, one relay, two loaders in one consumer group, the machine's
 * Postgres, Redis and Kafka broker, and its own ClickHouse server (scripts/clickhouse-server.sh:
 * clickhouse-local from libchdb.so behind ClickHouse's HTTP handler). The API and the dashboard are
 * checked over real HTTP on both ingest processes, the warehouse against Postgres (the figures of
 * tests/support/pipeline.ts, the dashboard against the reference of tests/support/oracle-reference.ts),
 * then a loader, the relay and the ClickHouse server are killed in turn during a load.
 */
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoCredentials } from '../../domain/demo.js';
import { browserTestsRun, launchChromium } from '../support/browser.js';
import { clickhouseTestUrl } from '../support/clickhouse-server.js';
import { databaseKinds } from '../support/databases.js';
import { alive, startDistributed, type RunningTopology } from '../support/distributed.js';
import { createProgramOverHttp, journey, load, track, type HttpProgram, type JourneyOutcome } from '../support/http-traffic.js';
import { kafkaBrokers } from '../support/kafka.js';
import { referencePerformance, type DashboardQuery } from '../support/oracle-reference.js';
import { waitForSameFigures } from '../support/pipeline.js';
import { checkoutSession, event, signed } from '../support/processor.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const BROKERS = kafkaBrokers();
const ADMIN_URL = databaseKinds().includes('postgres') ? process.env.DATABASE_URL : undefined;
const REDIS_URL = process.env.REDIS_URL;
if (process.env.CI && !REDIS_URL) throw new Error('CI is set but REDIS_URL is not: the distributed topology cannot be skipped in CI');
const runs = BROKERS.length > 0 && !!ADMIN_URL && !!REDIS_URL;
if (!runs) console.warn('the distributed topology test needs DATABASE_URL, REDIS_URL and KAFKA_BROKERS: skipped');

const DAY_MS = 86_400_000;
const QUERIES: DashboardQuery[] = [{}, { period: '7d' }, { period: '30d' }, { period: '90d' }, { period: 'all' }];

describe.skipIf(!runs)('npm run start:distributed: two ingest processes, a relay, two loaders, Kafka and the ClickHouse server', () => {
  let topo: RunningTopology;
  let demo: DemoCredentials;
  const programs: HttpProgram[] = [];
  const traffic: JourneyOutcome = { statuses: {} };

  beforeAll(async () => {
    topo = await startDistributed({ brokers: BROKERS, adminUrl: ADMIN_URL!, redisUrl: REDIS_URL! });
    demo = JSON.parse(await readFile(join(topo.dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;
  }, 300_000);
  afterAll(async () => {
    await topo?.cleanup();
  }, 180_000);

  /** The dashboard's answers of both ingest processes equal the Postgres reference, for every program. */
  async function expectDashboardEqualsPostgres(): Promise<number> {
    let compared = 0;
    const now = Date.now();
    const today = new Date(now).toISOString().slice(0, 10);
    const range = { dateFrom: new Date(now - 20 * DAY_MS).toISOString().slice(0, 10), dateTo: today };
    for (const programId of [demo.programId, ...programs.map((p) => p.programId)]) {
      for (const query of [...QUERIES, range]) {
        const reference = await referencePerformance(topo.db, programId, query, now);
        for (const base of topo.ingest) {
          const res = await fetch(`${base}/api/tracking/performance/${programId}?${new URLSearchParams(query as Record<string, string>)}`, {
            headers: { authorization: `Bearer ${demo.dashboardToken}` },
          });
          expect(res.status, `${base}, program ${programId}, ${JSON.stringify(query)}`).toBe(200);
          expect(await res.json(), `${base}, program ${programId}, ${JSON.stringify(query)}`).toEqual(reference);
          compared += 1;
        }
      }
    }
    return compared;
  }

  it('runs two ingest processes, one relay and two loaders, and keeps the demo credentials as the embedded start does', async () => {
    const state = topo.state();
    expect(Object.keys(state.processes).sort()).toEqual(['clickhouse', 'ingest-1', 'ingest-2', 'loader-1', 'loader-2', 'relay', 'webhooks']);
    for (const [name, { pid }] of Object.entries(state.processes)) expect(alive(pid), name).toBe(true);
    expect(state.ingest).toEqual(topo.ingest);
    // The embedded start's fields (domain/demo.ts), in a file only its owner reads.
    expect(Object.keys(demo).sort()).toEqual(['affCode', 'agentKey', 'apiKey', 'dashboardToken', 'processorWebhookSecret', 'programId']);
    expect(demo).toMatchObject({ apiKey: expect.stringMatching(/^aff_/), dashboardToken: expect.stringMatching(/^dsh_/), agentKey: expect.stringMatching(/^agt_/), processorWebhookSecret: expect.stringMatching(/^whsec_/) });
    expect((await stat(join(topo.dataDir, 'demo-credentials.json'))).mode & 0o777).toBe(0o600);
    for (const url of topo.ingest) expect(topo.output()).toContain(url);
    expect(topo.output()).toContain(`demo API key:         ${demo.apiKey}`);
    // No OpenID provider runs here (the embedded start's is in-process): the banner says to use the token.
    expect(topo.output()).toContain(`demo sign-in:         the demo dashboard token at ${topo.ingest[0]}/dashboard`);
    for (const base of topo.ingest) expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('answers the API on both processes, counts one rate limit for both through Redis, and accepts the demo processor secret', async () => {
    const [first, second] = topo.ingest as [string, string];
    for (let i = 0; i < 2; i++) programs.push(await createProgramOverHttp(topo.ingest[i]!, demo.dashboardToken, `Distributed ${i}`));
    const all = [{ programId: demo.programId, apiKey: demo.apiKey, affCode: demo.affCode }, ...programs];
    for (let i = 0; i < 24; i++) await journey(topo.ingest, all[i % all.length]!, i, 'api', traffic);
    expect(traffic.statuses.sale?.every((s) => s === 200)).toBe(true);

    // 60 clicks a minute per client address: 30 on each process, then the 61st is refused by either.
    const ip = `198.51.100.${1 + Math.floor(Math.random() * 250)}`;
    const click = (base: string) => track(base, 'click', { affiliate_url: `https://shop.demo.example/?aff=${demo.affCode}` }, { ip });
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => click(i % 2 ? second : first)));
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(200));
    expect((await click(first)).status).toBe(429);
    expect((await click(second)).status).toBe(429);

    // The demo's processor secret reached both processes: a signed event is taken, a wrong signature is not.
    const payload = JSON.stringify(event('checkout.session.completed', checkoutSession({ metadata: { program_id: String(demo.programId), svc_click_id: answers[0]!.body.click_id! } })));
    const deliver = (base: string, signature: string) =>
      fetch(`${base}/api/v1/webhooks/processor`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, body: payload });
    expect((await deliver(second, signed(payload, { secret: demo.processorWebhookSecret! }))).status).toBe(200);
    expect((await deliver(first, signed(payload, { secret: 'whsec_not_the_demo_secret' }))).status).toBe(400);
  });

  it('loads into the ClickHouse server exactly the numbers of Postgres; both processes\' dashboards equal the Postgres reference', { timeout: 240_000 }, async () => {
    const { postgres, warehouse } = await waitForSameFigures(topo.db, topo.warehouse, 180_000);
    expect(postgres.length).toBeGreaterThan(10);
    expect(warehouse).toEqual(postgres);
    expect(await expectDashboardEqualsPostgres()).toBe(3 * (QUERIES.length + 1) * 2);
  });

  it.runIf(browserTestsRun())('shows the dashboard page, served by the second process, with the figures of the API', { timeout: 120_000 }, async () => {
    const base = topo.ingest[1]!;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${base}/dashboard#program=${demo.programId}&period=7d`);
      // The token form sits under "Use a session token instead" where the page offers a provider's sign-in.
      await page.locator('#token-details summary').click({ timeout: 2_000 }).catch(() => undefined);
      await page.fill('#token', demo.dashboardToken);
      await page.click('#sign-in-button');
      await page.waitForSelector(`main[data-state="ready"][data-program-id="${demo.programId}"][data-period="7d"]`);
      const api = (await (await fetch(`${base}/api/tracking/performance/${demo.programId}?period=7d`, { headers: { authorization: `Bearer ${demo.dashboardToken}` } })).json()) as {
        data: { date: string; clicks: number; revenue: number }[];
        metrics: Record<string, number>;
      };
      const shown = await page.$$eval('[data-metric]', (nodes) => nodes.map((n) => [(n as unknown as { dataset: Record<string, string> }).dataset.metric, Number((n as unknown as { dataset: Record<string, string> }).dataset.value)]));
      const cards = Object.fromEntries(shown);
      expect(api.metrics.totalClicks).toBeGreaterThan(60);
      expect(cards).toMatchObject({ clicks: api.metrics.totalClicks, leads: api.metrics.totalLeads, conversions: api.metrics.totalConversions, revenue: api.metrics.totalRevenue });
      const days = await page.$$eval('#chart rect.day', (rects) => rects.map((r) => Number((r as unknown as { dataset: Record<string, string> }).dataset.clicks)));
      expect(days).toEqual(api.data.map((d) => d.clicks));
    } finally {
      await browser.close();
    }
  });

  it('gives analysts the read-only analyst user: npm run sql answers from analytics.*, and the server refuses the raw tables', { timeout: 120_000 }, async () => {
    const sqlRun = (query: string) =>
      run(process.execPath, ['--import', 'tsx', 'scripts/sql.ts', '--format', 'jsonl', query], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, CLICKHOUSE_URL: topo.analystUrl } });
    const { stdout } = await sqlRun('SELECT currentUser() AS user, count() AS clicks FROM analytics.clicks WHERE NOT is_test');
    const answer = JSON.parse(stdout) as { user: string; clicks: string | number };
    const [real] = await topo.warehouse.query<{ n: number }>({ name: 't.distributed_real_clicks', text: 'SELECT count() AS n FROM click_recorded FINAL WHERE NOT test' });
    expect(answer).toEqual({ user: 'analyst', clicks: expect.anything() });
    expect(Number(answer.clicks)).toBe(real!.n);
    const refused = await sqlRun('SELECT count() FROM default.click_recorded').then(
      () => undefined,
      (error: { stderr: string }) => error.stderr,
    );
    expect(refused).toMatch(/ACCESS_DENIED|Not enough privileges/);
  });

  it('a loader, the relay and the ClickHouse server killed (SIGKILL) in turn during a load: each comes back, and the warehouse ends with the numbers of Postgres', { timeout: 600_000 }, async () => {
    let loading = true;
    const all = [{ programId: demo.programId, apiKey: demo.apiKey, affCode: demo.affCode }, ...programs];
    const traffic = load(topo.ingest, all, { perSecond: 3, tag: 'faults', until: () => !loading });
    const killAndWait = async (name: string) => {
      const before = topo.state().processes[name]!.pid!;
      await sleep(3_000);
      process.kill(before, 'SIGKILL');
      const deadline = Date.now() + 150_000;
      for (;;) {
        const now = topo.state().processes[name]?.pid;
        if (now && now !== before && alive(now)) return;
        if (Date.now() > deadline) throw new Error(`${name} was not back within 150 s:\n${topo.output()}`);
        await sleep(250);
      }
    };
    try {
      await killAndWait('loader-1');
      await killAndWait('relay');
      await killAndWait('clickhouse');
      await sleep(3_000);
    } finally {
      loading = false;
    }
    const outcome = await traffic;
    // Nothing but the ingest processes answered: every call was taken (or refused by a rate limit).
    const statuses = Object.values(outcome.statuses).flat();
    expect(statuses.length).toBeGreaterThan(100);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const state = topo.state();
    expect(state.processes['loader-1']!.restarts).toBe(1);
    expect(state.processes.relay!.restarts).toBe(1);

    const { postgres, warehouse } = await waitForSameFigures(topo.db, topo.warehouse, 240_000);
    expect(warehouse).toEqual(postgres);
    await expectDashboardEqualsPostgres();
  });

  it('stops everything it started on SIGTERM, and leaves the machine\'s Postgres, Redis and Kafka running', { timeout: 180_000 }, async () => {
    const pids = Object.values(topo.state().processes).map((p) => p.pid);
    await topo.db.close();
    await topo.warehouse.close();
    expect(await topo.stop()).toEqual({ code: 0, signal: null });
    for (const pid of pids) expect(alive(pid)).toBe(false);
    await expect(stat(join(topo.dataDir, 'distributed.json'))).rejects.toThrow(/ENOENT/);
    const redis = new Redis(REDIS_URL!);
    try {
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
    await run('pg_isready', ['-h', new URL(ADMIN_URL!).hostname, '-p', new URL(ADMIN_URL!).port || '5432']);
    const [host, port] = BROKERS[0]!.split(':');
    await run('bash', ['-c', `exec 3<>/dev/tcp/${host}/${port}`]);
    const shared = clickhouseTestUrl();
    if (shared) expect(await (await fetch(`${shared}/ping`)).text()).toContain('Ok.');
  });
});
