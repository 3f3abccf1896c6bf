/**
 * scripts/clickhouse-server.sh (issue 29, point 1): a server of its own on a free port
 * (CLICKHOUSE_HTTP_PORT) with its own data directory (CLICKHOUSE_DATA_DIR), ready when /ping
 * answers; a second start finds it running, a start on a taken port refuses, a stop ends only that
 * process, and a server killed with SIGKILL starts again on the same data.
 */
import { execFile } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickhouseTestUrl } from '../support/clickhouse-server.js';
import { alive } from '../support/distributed.js';

const ROOT = join(import.meta.dirname, '../..');
const SCRIPT = join(ROOT, 'scripts/clickhouse-server.sh');

function script(command: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('bash', [SCRIPT, command], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

const query = async (port: number, text: string) => {
  const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: text });
  const body = await res.text();
  if (!res.ok) throw new Error(body);
  return body.trim();
};

describe('scripts/clickhouse-server.sh start|stop|status', () => {
  let dir: string;
  let env: Record<string, string>;
  let port: number;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-clickhouse-server-'));
    port = await freePort();
    env = { CLICKHOUSE_HTTP_PORT: String(port), CLICKHOUSE_DATA_DIR: dir };
  });
  afterAll(async () => {
    await script('stop', env);
    await rm(dir, { recursive: true, force: true });
  });

  it('starts on CLICKHOUSE_HTTP_PORT with its own data directory, once /ping answers, and says so', { timeout: 120_000 }, async () => {
    expect((await script('status', env)).code).toBe(3);
    const started = await script('start', env);
    expect(started.code, started.out).toBe(0);
    expect(started.out).toContain(`http://127.0.0.1:${port}`);
    expect(await (await fetch(`http://127.0.0.1:${port}/ping`)).text()).toBe('Ok.\n');
    expect(await query(port, 'SELECT version()')).toMatch(/^26\./);
    expect(await query(port, `SELECT value FROM system.server_settings WHERE name = 'path'`)).toBe(`${dir}/data/`);
    const status = await script('status', env);
    expect(status.code).toBe(0);
    expect(status.out).toContain(`on http://127.0.0.1:${port}`);
    const pid = Number(await readFile(join(dir, 'server.pid'), 'utf8'));
    expect(alive(pid)).toBe(true);
    // A second start finds it and starts nothing; one asking for another port is told which it has.
    expect((await script('start', env)).out).toContain(`already running (pid ${pid})`);
    const elsewhere = await script('start', { ...env, CLICKHOUSE_HTTP_PORT: String(port + 1) });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.out).toContain(`on port ${port}, not ${port + 1}: stop it first`);
    expect((await script('status', { ...env, CLICKHOUSE_HTTP_PORT: String(port + 1) })).out).toContain(`on http://127.0.0.1:${port}`);
  });

  it('refuses a port another process holds, and leaves that process alone', { timeout: 60_000 }, async () => {
    const other = await mkdtemp(join(tmpdir(), 'ats-clickhouse-server-other-'));
    try {
      const refused = await script('start', { CLICKHOUSE_HTTP_PORT: String(port), CLICKHOUSE_DATA_DIR: other });
      expect(refused.code).toBe(1);
      expect(refused.out).toContain('already in use by a process this script did not start');
      // Stopping from another data directory stops nothing.
      expect((await script('stop', { CLICKHOUSE_HTTP_PORT: String(port), CLICKHOUSE_DATA_DIR: other })).out).toContain('not running');
      expect(await (await fetch(`http://127.0.0.1:${port}/ping`)).text()).toBe('Ok.\n');
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('starts again on the same data after a SIGKILL', { timeout: 120_000 }, async () => {
    await query(port, 'CREATE TABLE IF NOT EXISTS kept (n UInt32) ENGINE = MergeTree ORDER BY n');
    await query(port, 'INSERT INTO kept VALUES (1), (2), (3)');
    const pid = Number(await readFile(join(dir, 'server.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
    while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
    expect((await script('status', env)).code).toBe(3);
    const again = await script('start', env);
    expect(again.code, again.out).toBe(0);
    expect(await query(port, 'SELECT sum(n) FROM kept')).toBe('6');
  });

  it('stops only the process it started, found by its data directory: the suite\'s own server keeps answering', { timeout: 120_000 }, async () => {
    const pid = Number(await readFile(join(dir, 'server.pid'), 'utf8'));
    // Even when the stop names another port: the data directory's server is the one stopped.
    const stopped = await script('stop', { ...env, CLICKHOUSE_HTTP_PORT: String(port + 1) });
    expect(stopped.code, stopped.out).toBe(0);
    expect(alive(pid)).toBe(false);
    expect((await script('status', env)).code).toBe(3);
    await expect(fetch(`http://127.0.0.1:${port}/ping`)).rejects.toThrow();
    const shared = clickhouseTestUrl();
    if (shared) expect(await (await fetch(`${shared}/ping`)).text()).toBe('Ok.\n');
  });
});
