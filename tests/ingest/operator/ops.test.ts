/**
 * `npm run ops` while the embedded service runs: its commands go through the service's operator
 * endpoint, so what they make (a session) is what the running service knows. And the real start's
 * console: the banner's dashboard URL, `/` leading to it, a sign-in through its own provider.
 * main.ts and scripts/ops.ts run as processes on a data directory of their own.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPS_ENDPOINT_FILE, runningOpsEndpoint } from '../../../ingest/operator/endpoint.js';
import { signInThroughProvider } from '../../support/console-service.js';
import { runScript, startService, waitFor } from '../../support/scripts.js';

const runOps = (args: string[], env: Record<string, string>) => runScript('scripts/ops.ts', args, env);

describe('npm run ops against the running embedded service, and the start banner', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ats-ops-'));
    env = { DATA_DIR: dataDir, DATABASE_URL: '', CLICKHOUSE_URL: '', KAFKA_BROKERS: '', REDIS_URL: '', HOST: '127.0.0.1', PORT: '0', SQL_PORT: '0', LOG_LEVEL: 'warn', SEED_DEMO: 'true' };
  });
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('while the service runs, a session made by ops works on it at once; stopped, ops opens the data itself', async () => {
    const service = startService(env);
    try {
      const url = await waitFor('the banner', () => /listening on (http:\/\/\S+)/.exec(service.log)?.[1]);
      // The first start prints where the console is, and / leads there.
      expect(service.log).toContain(`dashboard: ${url}/dashboard`);
      const root = await fetch(`${url}/`, { redirect: 'manual' });
      expect(root.status).toBe(302);
      expect(root.headers.get('location')).toBe('/dashboard');

      const endpoint = await waitFor('the operator endpoint file', async () => (existsSync(join(dataDir, OPS_ENDPOINT_FILE)) ? runningOpsEndpoint(dataDir) : undefined));
      expect(endpoint.pid).toBe(service.process.pid);
      expect((await stat(join(dataDir, OPS_ENDPOINT_FILE))).mode & 0o077).toBe(0);

      const made = await runOps(['create-workspace', 'Ops brand', 'ops-owner@brand.example'], env);
      expect(made.code, made.stderr).toBe(0);
      const { dashboardToken } = JSON.parse(made.stdout.trim()) as { dashboardToken: string };
      const me = await fetch(`${url}/api/tracking/session`, { headers: { authorization: `Bearer ${dashboardToken}` } });
      expect(me.status).toBe(200);
      expect(((await me.json()) as { data: { user: { email: string } } }).data.user.email).toBe('ops-owner@brand.example');

      // Suspension through the running service ends the session from the next request on.
      expect((await runOps(['suspend-user', 'ops-owner@brand.example'], env)).code).toBe(0);
      expect((await fetch(`${url}/api/tracking/session`, { headers: { authorization: `Bearer ${dashboardToken}` } })).status).toBe(401);
      expect((await runOps(['reinstate-user', 'ops-owner@brand.example'], env)).code).toBe(0);
      expect((await fetch(`${url}/api/tracking/session`, { headers: { authorization: `Bearer ${dashboardToken}` } })).status).toBe(200);

      // A wrong command gets the usage; a wrong token gets nothing.
      const wrong = await runOps(['no-such-command'], env);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain('usage:');
      const forged = await fetch(`${endpoint.url}/ops`, { method: 'POST', headers: { authorization: 'Bearer not-the-token-0000000000' }, body: '{"command":"list-agent-keys","args":["1"]}' });
      expect(forged.status).toBe(401);

      // The demo owner signs in to the console through the start's own provider.
      const signedIn = await signInThroughProvider(url, 'owner@demo.example');
      expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
      // So does the person ops just made (a member of a workspace).
      expect((await signInThroughProvider(url, 'ops-owner@brand.example')).status).toBe(200);
    } finally {
      service.process.kill('SIGTERM');
      await service.exited;
    }
    expect(service.log).not.toMatch(/shutdown failed/);
    expect(existsSync(join(dataDir, OPS_ENDPOINT_FILE))).toBe(false);
    // Stopped: ops opens the data directory itself, and sees what the service wrote.
    const direct = await runOps(['revoke-sessions', 'ops-owner@brand.example'], env);
    expect(direct.code, direct.stderr).toBe(0);
    expect(direct.stdout).toMatch(/ops-owner@brand.example: [1-9]\d* dashboard session\(s\)/);
  }, 240_000);
});
