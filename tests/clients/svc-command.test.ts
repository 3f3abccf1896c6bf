import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, stat, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { issueProgramKey } from '../../domain/programs/api-keys.js';
import { hashSecret } from '../../domain/access/secrets.js';
import { DEMO_ACCOUNT } from '../../ingest/oidc/embedded-provider.js';
import { addMember, createWorkspace } from '../../domain/access/workspaces.js';
import { loginPageNonce, startCliService, type CliService } from '../support/cli-service.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';

const SVC = fileURLToPath(new URL('../../clients/cli/bin/svc.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The svc binary as a child process, with its own config directory and no browser. */
function svc(args: string[], env: Record<string, string>, onStderr?: (text: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}


/** `svc login` as a child process; the browser's part (login page nonce, provider-signed id_token, callback) is done over HTTP. */
async function loginThroughCommand(service: CliService, env: Record<string, string>): Promise<Run> {
  let completing: Promise<void> | undefined;
  const run = await svc(['login', '--no-browser', '--json'], env, (stderr) => {
    const line = stderr.split('\n').find((l) => l.startsWith('{"browser_url"'));
    if (!line || completing) return;
    const state = new URL(JSON.parse(line).browser_url).searchParams.get('state')!;
    completing = (async () => {
      const nonce = await loginPageNonce(service.url, state);
      const res = await fetch(new URL('/api/v1/cli/auth/callback', service.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ state, id_token: await service.signIdToken(nonce) }),
      });
      if (!res.ok) throw new Error(`callback answered ${res.status}: ${await res.text()}`);
    })();
  });
  await completing;
  return run;
}

async function demoService(t: TestDatabase) {
  const service = await startCliService(t.db);
  const workspaceId = await createWorkspace(t.db, 'Demo workspace');
  await addMember(t.db, workspaceId, DEMO_ACCOUNT.email, 'owner');
  const configHome = await mkdtemp(join(tmpdir(), 'svc-config-'));
  const env = { PATH: process.env.PATH ?? '', HOME: configHome, XDG_CONFIG_HOME: configHome, SVC_BASE_URL: service.url };
  return { service, configHome, env };
}

const programCountOf = async (t: TestDatabase) => (await t.db.one<{ n: number }>(sql('t.programs', 'SELECT count(*)::int AS n FROM programs')))!.n;

describe.each(databaseKinds())('the svc command against the real service on %s', (kind) => {
  let t: TestDatabase;
  let service: CliService;
  let configHome: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    ({ service, configHome, env } = await demoService(t));
  }, 120_000);
  afterAll(async () => {
    await service?.close();
    await t?.drop();
    if (configHome) await rm(configHome, { recursive: true, force: true });
  });

  const programCount = () => programCountOf(t);

  it('every command, as scripts run them: login, whoami, programs, init, status, test-event, logout; exit codes and messages', async () => {
    // login: the CLI prints the link; the "browser" (here: the login page's nonce and an id_token
    // signed by the provider's key, posted to the callback) completes it; the CLI's poll collects the token.
    const login = await loginThroughCommand(service, env);
    expect(login.code, login.stderr).toBe(0);
    const loggedIn = JSON.parse(login.stdout);
    expect(loggedIn).toMatchObject({ logged_in: true, email: DEMO_ACCOUNT.email, base_url: service.url });
    const file = join(configHome, 'svc', 'credentials.json');
    expect(loggedIn.credentials_file).toBe(file);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(file, 'utf8'));
    const tokens = await t.db.many<{ token_hash: string }>(sql('t.token_hashes', 'SELECT token_hash FROM cli_login_tokens'));
    expect(tokens.map((r) => r.token_hash)).toContain(hashSecret(stored.token));

    const whoami = await svc(['whoami', '--json'], env);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout)).toMatchObject({ email: DEMO_ACCOUNT.email, base_url: service.url, token_source: 'stored' });

    const none = await svc(['programs'], env);
    expect([none.code, none.stdout.trim()]).toEqual([0, 'No programs yet. Create one with `svc init`.']);

    // init never prompts without a terminal: it names the missing flags, exit 2, nothing created.
    const before = await programCount();
    const noTty = await svc(['init', '--name', 'Shop'], env);
    expect(noTty.code).toBe(2);
    expect(noTty.stderr).toContain('Missing --domain, --commission-type, --commission-rate (no terminal to ask on).');
    expect(await programCount()).toBe(before);
    const invalid = await svc(['init', '--name', 'Shop', '--domain', 'shop.example', '--commission-type', 'percent', '--commission-rate', '-3'], env);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('commission_rate must be a positive number');

    const init = await svc(['init', '--name', 'Shop', '--domain', 'shop.example', '--commission-type', 'percent', '--commission-rate', '20', '--json'], env);
    expect(init.code, init.stderr).toBe(0);
    const program = JSON.parse(init.stdout).program;
    expect(program).toMatchObject({ name: 'Shop', domain: 'shop.example', commission_type: 'percent', commission_rate: 20 });

    const programs = await svc(['programs'], env);
    expect(programs.code).toBe(0);
    expect(programs.stdout).toMatch(new RegExp(`^${program.id}\\s+Shop\\s+shop\\.example\\s+20 percent`, 'm'));

    // status and test-event take the program key (a workspace owner generated it in the dashboard).
    const { apiKey } = await issueProgramKey(t.db, program.id);
    const keyEnv = { ...env, SVC_API_KEY: apiKey };
    const status = await svc(['status', '--json'], keyEnv);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).stepStatuses).toEqual({ pageview: 'pending', referrals: 'pending', payments: 'pending' });

    const click = await svc(['test-event', 'click'], keyEnv);
    expect(click.code, click.stderr).toBe(0);
    expect(click.stdout).toMatch(/^Test click recorded:\n {2}click {2}click_id=[0-9a-f-]{36}/);
    const chain = await svc(['test-event', '--chain', '--json'], keyEnv);
    expect(chain.code, chain.stderr).toBe(0);
    expect(JSON.parse(chain.stdout).steps.map((s: { step: string }) => s.step)).toEqual(['click', 'lead', 'sale']);
    const human = await svc(['status'], keyEnv);
    expect(human.stdout).toContain('[x] pageview');
    expect(human.stdout).toContain('[x] referrals');
    expect(human.stdout).toContain('[ ] payments');

    const badType = await svc(['test-event', 'refund'], keyEnv);
    expect(badType.code).toBe(1);
    expect(badType.stderr.trim().split('\n').at(-1)).toBe('Error: Invalid event_type: refund. Valid: click, lead, sale');
    const usage = await svc(['test-event'], keyEnv);
    expect(usage.code).toBe(2);
    const wrongKey = await svc(['status', '--json'], { ...env, SVC_API_KEY: 'aff_wrong' });
    expect(wrongKey.code).toBe(3);
    expect(JSON.parse(wrongKey.stderr).error).toMatchObject({ status: 401, exit_code: 3 });
    expect(JSON.parse(wrongKey.stderr).error.message).toMatch(/^Invalid API key\./);
    const noKey = await svc(['status'], env);
    expect([noKey.code, noKey.stderr.trim()]).toEqual([2, 'Error: No program API key. Set SVC_API_KEY or pass --api-key.']);

    // CI: SVC_TOKEN instead of a stored login; a bad one says to run svc login, exit 3.
    const ci = await svc(['programs', '--json'], { ...env, SVC_TOKEN: stored.token });
    expect(JSON.parse(ci.stdout)).toHaveLength(1);
    const badToken = await svc(['programs'], { ...env, SVC_TOKEN: 'slt_bad' });
    expect([badToken.code, badToken.stderr.trim()]).toEqual([3, 'Error: Invalid or expired login token. Run `svc login` to log in again.']);

    const logout = await svc(['logout', '--json'], env);
    expect([logout.code, JSON.parse(logout.stdout)]).toEqual([0, { logged_out: true }]);
    await expect(stat(file)).rejects.toThrow();
    const after = await svc(['whoami'], env);
    expect([after.code, after.stderr.trim()]).toEqual([3, `Error: Not logged in to ${service.url}. Run \`svc login\` (or set SVC_TOKEN).`]);

    const down = await svc(['status', '--base-url', 'http://127.0.0.1:9'], keyEnv);
    expect(down.code).toBe(8);
    expect(down.stderr).toContain('Cannot reach the service at http://127.0.0.1:9');
  }, 300_000);
});

describe('the svc command on a terminal', () => {
  let t: TestDatabase;
  let service: CliService;
  let configHome: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    ({ service, configHome, env } = await demoService(t));
  }, 120_000);
  afterAll(async () => {
    await service?.close();
    await t?.drop();
    if (configHome) await rm(configHome, { recursive: true, force: true });
  });

  it('init asks for the missing fields on a terminal (under tmux)', async () => {
    // tmux is required, like the other real parts (.ci/run installs it).
    expect(spawnSync('tmux', ['-V']).status, 'tmux must be installed: apt-get install -y tmux').toBe(0);
    // A logged-in config for the terminal session (SVC_TOKEN would do too; the stored login is what people use).
    const session = `svc-init-${process.pid}-${Date.now()}`;
    const done = join(configHome, `${session}.exit`);
    const login = await loginThroughCommand(service, env);
    expect(login.code, login.stderr).toBe(0);

    const command = [
      ...Object.entries(env).map(([k, v]) => `${k}='${v}'`),
      `'${process.execPath}' '${SVC}' init --base-url '${service.url}'; echo $? > '${done}'`,
    ].join(' ');
    const tmuxRun = (...args: string[]) => spawnSync('tmux', args, { encoding: 'utf8' });
    expect(tmuxRun('new-session', '-d', '-s', session, '-x', '160', '-y', '40', `env ${command}; sleep 600`).status).toBe(0);
    const screen = () => tmuxRun('capture-pane', '-p', '-t', session).stdout;
    /** Waits (long: the machine is shared) until the pane shows `text`. */
    const waitFor = async (text: string) => {
      const deadline = Date.now() + 150_000;
      while (!screen().includes(text)) {
        if (Date.now() > deadline) throw new Error(`tmux pane never showed "${text}":\n${screen()}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    const type = (keys: string) => expect(tmuxRun('send-keys', '-t', session, '-l', keys).status).toBe(0);
    const enter = () => expect(tmuxRun('send-keys', '-t', session, 'Enter').status).toBe(0);
    try {
      const before = await programCountOf(t);
      await waitFor('Program name');
      type('Terminal shop');
      enter();
      await waitFor('Domain of the brand site');
      type('terminal.example');
      enter();
      await waitFor('Commission type');
      tmuxRun('send-keys', '-t', session, 'Down'); // percent -> fixed
      enter();
      await waitFor('Commission rate');
      type('7');
      enter();
      await waitFor('Created program');
      const deadline = Date.now() + 60_000;
      let code = '';
      while (Date.now() < deadline) {
        code = await readFile(done, 'utf8').catch(() => '');
        if (code) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(code.trim()).toBe('0');
      expect(await programCountOf(t)).toBe(before + 1);
      const created = await t.db.one<{ name: string; domain: string; commission_type: string; commission_rate: number }>(
        sql('t.terminal_program', `SELECT name, domain, commission_type, commission_rate FROM programs WHERE name = 'Terminal shop'`),
      );
      expect(created).toEqual({ name: 'Terminal shop', domain: 'terminal.example', commission_type: 'fixed', commission_rate: 7 });
    } finally {
      tmuxRun('kill-session', '-t', session);
    }
  }, 400_000);
});
