import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { ServiceError, UnreachableError } from '../api.js';
import type { StoredLogin } from '../credentials.js';
import { ENVIRONMENT, type Environment } from '../environment.js';
import { asAccount, CliFailure, EXIT, loginToken, print, progress, type Context, type Run } from '../context.js';
import type { LoginPollData, LoginStartData, ProgramItem } from '../wire.js';

function openBrowser(env: Environment, url: string): boolean {
  if (!env.hasDisplay) return false;
  const [command, args] =
    env.platform === 'darwin' ? ['open', [url]] : env.platform === 'win32' ? ['cmd', ['/c', 'start', '', url]] : ['xdg-open', [url]];
  try {
    const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}

async function login(ctx: Context, options: { browser: boolean }) {
  const started = await ctx.api.request<LoginStartData>('/auth/start', { method: 'POST' });
  const opened = options.browser && openBrowser(ctx.env, started.browser_url);
  if (!ctx.json) {
    ctx.io.stderr.write(
      `\nOpen this link to log in${opened ? ' (opened in your browser)' : ''}:\n\n  ${started.browser_url}\n\n` +
        `Check that the page shows the code ${started.user_code}\n\n`,
    );
  } else {
    ctx.io.stderr.write(`${JSON.stringify({ browser_url: started.browser_url, user_code: started.user_code })}\n`);
  }
  const wait = progress(ctx, 'Waiting for the browser sign-in...');
  const deadline = Date.parse(started.expires_at) + 5_000;
  let interval = Math.max(1, started.poll_interval_seconds) * 1000;
  for (;;) {
    await sleep(interval);
    let polled: LoginPollData;
    try {
      polled = await ctx.api.request<LoginPollData>('/auth/poll', { query: { state: started.state }, headers: { 'x-poll-secret': started.poll_secret } });
    } catch (error) {
      // Honour a rate limit, and ride out a brief outage until the link expires.
      if (error instanceof ServiceError && error.status === 429) {
        interval = Math.max(interval, (error.retryAfterSeconds ?? 5) * 1000);
        continue;
      }
      if ((error instanceof UnreachableError || (error instanceof ServiceError && error.status >= 500)) && Date.now() < deadline) continue;
      wait.stop();
      throw error;
    }
    if (polled.status === 'complete') {
      const stored: StoredLogin = { baseUrl: ctx.baseUrl, token: polled.token, expiresAt: polled.expires_at, email: polled.user.email };
      await ctx.store.write(stored);
      wait.stop(`Logged in as ${polled.user.email}`);
      print(ctx, { logged_in: true, email: polled.user.email, base_url: ctx.baseUrl, expires_at: polled.expires_at, credentials_file: ctx.store.file }, `Token saved to ${ctx.store.file}`);
      return;
    }
    if (polled.status === 'expired' || Date.now() > deadline) {
      wait.stop();
      throw new CliFailure('The login link expired (it lives 5 minutes). Run `svc login` again.', EXIT.notFound);
    }
  }
}

async function whoami(ctx: Context) {
  const token = loginToken(ctx);
  const programs = await asAccount(ctx.api.request<ProgramItem[]>('/programs', { token }));
  const email = ctx.env.loginToken ? undefined : ctx.stored?.email;
  const advertisers = [...new Map(programs.map((p) => [p.advertiser_id, p.advertiser_name])).entries()].map(([id, name]) => ({ id, name }));
  print(
    ctx,
    { email: email ?? null, base_url: ctx.baseUrl, token_source: ctx.env.loginToken ? ENVIRONMENT.loginToken : 'stored', expires_at: ctx.env.loginToken ? null : ctx.stored?.expiresAt, advertisers, programs: programs.length },
    `${email ? `Logged in as ${email}` : `Using ${ENVIRONMENT.loginToken}`} on ${ctx.baseUrl}\n${programs.length} program(s)${advertisers.length ? ` in ${advertisers.map((a) => `${a.name} (#${a.id})`).join(', ')}` : ''}`,
  );
}

/** svc login (the browser login), logout (forgets the stored token) and whoami (checks it with the service). */
export function addLoginCommands(program: Command, run: Run) {
  program
    .command('login')
    .description('Log in through your browser; the token is stored in $XDG_CONFIG_HOME/svc (mode 0600)')
    .option('--no-browser', 'only print the link')
    .action(run(async (ctx, o: { browser: boolean }) => login(ctx, o)));

  program
    .command('logout')
    .description('Forget the stored login token')
    .action(
      run(async (ctx) => {
        const removed = await ctx.store.remove();
        print(ctx, { logged_out: removed }, removed ? 'Logged out.' : 'Not logged in.');
      }),
    );

  program.command('whoami').description('Show who is logged in, and check the token with the service').action(run(whoami));
}
