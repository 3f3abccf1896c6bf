import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { isCancel, select, spinner, text } from '@clack/prompts';
import { Command, CommanderError, Option } from 'commander';
import { createApi, ServiceError, UnreachableError, type Api } from './api.js';
import { credentialStore, type StoredLogin } from './credentials.js';
import { ENVIRONMENT, readEnvironment, type Environment } from './environment.js';

/** Exit codes scripts can rely on (also in the README). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  /** 401: log in again (account token) or fix the API key. */
  unauthorized: 3,
  /** 403: the credential is valid but not for this (advertiser, suspended account). */
  forbidden: 4,
  /** 404 or an expired/consumed login session. */
  notFound: 5,
  rateLimited: 6,
  /** 5xx. */
  serverError: 7,
  /** The service could not be reached. */
  unreachable: 8,
} as const;

const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';
// src/ and dist/ both sit beside package.json.
const VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
const COMMISSION_TYPES = ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'] as const;

/** A failure the command reports itself, with its exit code. */
class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

interface GlobalOptions {
  baseUrl?: string;
  json?: boolean;
}

interface Context {
  env: Environment;
  io: Io;
  json: boolean;
  store: ReturnType<typeof credentialStore>;
  baseUrl: string;
  api: Api;
  stored: StoredLogin | undefined;
}

const exitCodeOf = (error: ServiceError) => {
  if (error.status === 401) return EXIT.unauthorized;
  if (error.status === 403) return EXIT.forbidden;
  if (error.status === 404 || error.status === 410) return EXIT.notFound;
  if (error.status === 429) return EXIT.rateLimited;
  if (error.status >= 500) return EXIT.serverError;
  return EXIT.failure;
};

function print(ctx: Context, json: unknown, human: string) {
  ctx.io.stdout.write(ctx.json ? `${JSON.stringify(json, null, 2)}\n` : `${human}\n`);
}

/** Progress goes to stderr, so stdout stays the result; a spinner only on a terminal. */
function progress(ctx: Context, message: string) {
  const interactive = !ctx.json && Boolean((ctx.io.stderr as { isTTY?: boolean }).isTTY);
  if (!interactive) {
    if (!ctx.json) ctx.io.stderr.write(`${message}\n`);
    return { update: (_m: string) => {}, stop: (m?: string) => (m && !ctx.json ? ctx.io.stderr.write(`${m}\n`) : undefined) };
  }
  const s = spinner({ output: ctx.io.stderr as NodeJS.WriteStream });
  s.start(message);
  return { update: (m: string) => s.message(m), stop: (m?: string) => s.stop(m) };
}

async function context(cmd: Command, io: Io, env: Environment): Promise<Context> {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const store = credentialStore(env.configDir);
  const stored = await store.read();
  const baseUrl = (opts.baseUrl ?? env.baseUrl ?? stored?.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  return { env, io, json: Boolean(opts.json), store, baseUrl, api: createApi(baseUrl), stored };
}

/** Account-token calls: any 401 says how to fix it (the service's words usually do already). */
async function asAccount<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof ServiceError && error.status === 401 && !error.message.includes('svc login')) {
      throw new ServiceError(401, `${error.message}. Run \`svc login\` to log in again.`, { code: error.code, requestId: error.requestId });
    }
    throw error;
  }
}

/** The account login token: SVC_TOKEN, else the stored login for this service. */
function loginToken(ctx: Context): string {
  if (ctx.env.loginToken) return ctx.env.loginToken;
  if (ctx.stored && ctx.stored.baseUrl === ctx.baseUrl) return ctx.stored.token;
  throw new CliFailure(`Not logged in to ${ctx.baseUrl}. Run \`svc login\` (or set ${ENVIRONMENT.loginToken}).`, EXIT.unauthorized);
}

function programKey(ctx: Context, option: string | undefined): string {
  const key = option ?? ctx.env.programKey;
  if (!key) throw new CliFailure(`No program API key. Set ${ENVIRONMENT.programKey} or pass --api-key.`, EXIT.usage);
  return key;
}

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

interface Started {
  state: string;
  poll_secret: string;
  browser_url: string;
  user_code: string;
  poll_interval_seconds: number;
  expires_at: string;
}
type Polled =
  | { status: 'pending' }
  | { status: 'expired' }
  | { status: 'complete'; token: string; expires_at: string; user: { id: number; email: string } };

async function login(ctx: Context, options: { browser: boolean }) {
  const started = await ctx.api.request<Started>('/auth/start', { method: 'POST' });
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
    let polled: Polled;
    try {
      polled = await ctx.api.request<Polled>('/auth/poll', { query: { state: started.state }, headers: { 'x-poll-secret': started.poll_secret } });
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

interface ProgramRow {
  id: number;
  advertiser_id: number;
  advertiser_name: string;
  role: string;
  name: string;
  domain: string;
  commission_type: string;
  commission_rate: number;
  api_token_masked: string | null;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

interface InitOptions {
  name?: string;
  domain?: string;
  commissionType?: string;
  commissionRate?: string;
  advertiserId?: string;
}

/** Asks for the fields init lacks, on a terminal only; without one, says which flags are missing. */
async function completeInit(ctx: Context, o: InitOptions): Promise<Required<Omit<InitOptions, 'advertiserId'>> & { advertiserId?: string }> {
  const missing = (['name', 'domain', 'commissionType', 'commissionRate'] as const).filter((k) => o[k] === undefined);
  if (missing.length === 0) return o as Required<InitOptions>;
  const flags = missing.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  if (ctx.json || !ctx.io.stdin.isTTY || !ctx.io.stdout.isTTY) {
    throw new CliFailure(`Missing ${flags.join(', ')} (no terminal to ask on).`, EXIT.usage);
  }
  const answer = <T>(value: T | symbol): T => {
    if (isCancel(value)) throw new CliFailure('Cancelled.', EXIT.failure);
    return value as T;
  };
  const required = (label: string) => (v: string | undefined) => (v && v.trim() ? undefined : `${label} is required`);
  const name = o.name ?? answer<string>(await text({ message: 'Program name', validate: required('Name') }));
  const domain = o.domain ?? answer<string>(await text({ message: 'Domain of the brand site', placeholder: 'shop.example.com', validate: required('Domain') }));
  const commissionType =
    o.commissionType ??
    answer<string>(await select({ message: 'Commission type', options: COMMISSION_TYPES.map((value) => ({ value, label: value })), initialValue: 'percent' as string }));
  const commissionRate =
    o.commissionRate ??
    answer<string>(await text({ message: 'Commission rate', placeholder: commissionType.includes('percent') ? '20 (percent)' : '10 (currency units)', validate: (v) => (Number(v) > 0 ? undefined : 'A positive number') }));
  return { name, domain, commissionType, commissionRate, advertiserId: o.advertiserId };
}

interface StatusBody {
  programId: string;
  stepStatuses: Record<string, string>;
  statistics: { pageview: { testEventCount: number }; referrals: { testEventCount: number }; payments: { paymentTrackingMode: string; processorConnectionStatus: string } };
  hasPartners: boolean;
}

/** The svc program. `io` and `env` are injectable so tests can run it in-process too. */
export function buildProgram(io: Io, env: Environment = readEnvironment()): Command {
  const program = new Command('svc')
    .description('Command line for the affiliate tracking service (beta): log in, create programs, check status, send test events.')
    .addOption(new Option('--base-url <url>', `service URL (default: $${ENVIRONMENT.baseUrl}, the logged-in service, or ${DEFAULT_BASE_URL})`))
    .option('--json', 'machine-readable output on stdout')
    .version(VERSION)
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();

  const run = (fn: (ctx: Context, ...args: never[]) => Promise<void>) =>
    async function action(this: Command, ...args: unknown[]) {
      const ctx = await context(this, io, env);
      await (fn as (ctx: Context, ...a: unknown[]) => Promise<void>)(ctx, ...args);
    };

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

  program
    .command('whoami')
    .description('Show who is logged in, and check the token with the service')
    .action(
      run(async (ctx) => {
        const token = loginToken(ctx);
        const programs = await asAccount(ctx.api.request<ProgramRow[]>('/programs', { token }));
        const email = ctx.env.loginToken ? undefined : ctx.stored?.email;
        const advertisers = [...new Map(programs.map((p) => [p.advertiser_id, p.advertiser_name])).entries()].map(([id, name]) => ({ id, name }));
        print(
          ctx,
          { email: email ?? null, base_url: ctx.baseUrl, token_source: ctx.env.loginToken ? ENVIRONMENT.loginToken : 'stored', expires_at: ctx.env.loginToken ? null : ctx.stored?.expiresAt, advertisers, programs: programs.length },
          `${email ? `Logged in as ${email}` : `Using ${ENVIRONMENT.loginToken}`} on ${ctx.baseUrl}\n${programs.length} program(s)${advertisers.length ? ` in ${advertisers.map((a) => `${a.name} (#${a.id})`).join(', ')}` : ''}`,
        );
      }),
    );

  program
    .command('programs')
    .description('List your programs')
    .action(
      run(async (ctx) => {
        const programs = await asAccount(ctx.api.request<ProgramRow[]>('/programs', { token: loginToken(ctx) }));
        const human = programs.length
          ? table([
              ['ID', 'NAME', 'DOMAIN', 'COMMISSION', 'ADVERTISER', 'API KEY'],
              ...programs.map((p) => [String(p.id), p.name, p.domain, `${p.commission_rate} ${p.commission_type}`, `${p.advertiser_name} (#${p.advertiser_id})`, p.api_token_masked ?? '-']),
            ])
          : 'No programs yet. Create one with `svc init`.';
        print(ctx, programs, human);
      }),
    );

  program
    .command('init')
    .description('Create a program (asks for missing fields on a terminal)')
    .option('--name <name>')
    .option('--domain <domain>')
    .addOption(new Option('--commission-type <type>').choices(COMMISSION_TYPES))
    .option('--commission-rate <rate>')
    .option('--advertiser-id <id>', 'when your account belongs to several advertisers')
    .action(
      run(async (ctx, o: InitOptions) => {
        const token = loginToken(ctx);
        const f = await completeInit(ctx, o);
        const body: Record<string, unknown> = { name: f.name, domain: f.domain, commission_type: f.commissionType, commission_rate: Number(f.commissionRate) };
        if (f.advertiserId !== undefined) body.advertiser_id = Number(f.advertiserId);
        const created = await asAccount(ctx.api.request<{ program: ProgramRow; next_steps: string[] }>('/init', { method: 'POST', token, body }));
        print(ctx, created, `Created program #${created.program.id} ${created.program.name} (${created.program.domain})\n\nNext:\n${created.next_steps.map((s) => `  - ${s}`).join('\n')}`);
      }),
    );

  program
    .command('status')
    .description(`Integration status of the program of the API key ($${ENVIRONMENT.programKey})`)
    .option('--api-key <key>', `program API key (default: $${ENVIRONMENT.programKey})`)
    .action(
      run(async (ctx, o: { apiKey?: string }) => {
        const s = await ctx.api.request<StatusBody>('/status', { token: programKey(ctx, o.apiKey) });
        const mark = (v: string) => (v === 'complete' ? '[x]' : '[ ]');
        const human = [
          `Program ${s.programId}`,
          `${mark(s.stepStatuses.pageview!)} pageview   ${s.statistics.pageview.testEventCount} test click(s)`,
          `${mark(s.stepStatuses.referrals!)} referrals  ${s.statistics.referrals.testEventCount} test lead(s)`,
          `${mark(s.stepStatuses.payments!)} payments   mode ${s.statistics.payments.paymentTrackingMode}, processor ${s.statistics.payments.processorConnectionStatus}`,
          `partners: ${s.hasPartners ? 'yes' : 'none approved yet'}`,
        ].join('\n');
        print(ctx, s, human);
      }),
    );

  program
    .command('test-event')
    .description('Send a synthetic test event (click, lead or sale), or the whole chain with --chain')
    .argument('[type]', 'click, lead or sale')
    .option('--chain', 'run click, lead and sale in a row (10 per program per hour)')
    .option('--api-key <key>', `program API key (default: $${ENVIRONMENT.programKey})`)
    .action(
      run(async (ctx, type: string | undefined, o: { chain?: boolean; apiKey?: string }) => {
        if (o.chain && type) throw new CliFailure('Give an event type or --chain, not both.', EXIT.usage);
        if (!o.chain && !type) throw new CliFailure('Give an event type (click, lead, sale) or --chain.', EXIT.usage);
        const token = programKey(ctx, o.apiKey);
        const wait = progress(ctx, o.chain ? 'Running the click, lead, sale chain...' : `Sending a test ${type}...`);
        let result: { mode: string; event_type?: string; recorded?: Record<string, unknown>; steps?: { step: string; recorded: Record<string, unknown> }[]; chains_left_this_hour?: number };
        try {
          result = await ctx.api.request('/test-event', { method: 'POST', token, body: o.chain ? { type: 'chain' } : { event_type: type } });
        } finally {
          wait.stop();
        }
        const describe = (step: string, recorded: Record<string, unknown>) => `  ${step.padEnd(6)} ${Object.entries(recorded).map(([k, v]) => `${k}=${String(v)}`).join(' ')}`;
        const human =
          result.mode === 'chain'
            ? `Chain recorded (test mode):\n${result.steps!.map((s) => describe(s.step, s.recorded)).join('\n')}\n${result.chains_left_this_hour} chain(s) left this hour`
            : `Test ${result.event_type} recorded:\n${describe(result.event_type!, result.recorded!)}`;
        print(ctx, result, human);
      }),
    );

  return program;
}

/** Runs svc with the arguments (without node and script); resolves to the exit code. */
export async function runCli(argv: string[], io: Io = process, env?: Environment): Promise<number> {
  const program = buildProgram(io, env);
  const json = argv.includes('--json');
  const fail = (message: string, code: number, extra: Record<string, unknown> = {}) => {
    io.stderr.write(json ? `${JSON.stringify({ error: { message, exit_code: code, ...extra } })}\n` : `Error: ${message}\n`);
    return code;
  };
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return EXIT.ok;
      return EXIT.usage;
    }
    if (error instanceof CliFailure) return fail(error.message, error.exitCode);
    if (error instanceof UnreachableError) return fail(error.message, EXIT.unreachable);
    if (error instanceof ServiceError) {
      const extra = error.status === 429 && error.retryAfterSeconds ? ` Retry in ${error.retryAfterSeconds}s.` : '';
      return fail(`${error.message}${extra}`, exitCodeOf(error), { status: error.status, code: error.code ?? null, request_id: error.requestId ?? null });
    }
    return fail((error as Error)?.message ?? String(error), EXIT.failure);
  }
}
