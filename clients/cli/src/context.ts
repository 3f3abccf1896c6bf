import { spinner } from '@clack/prompts';
import type { Command } from 'commander';
import { createApi, ServiceError, type Api } from './api.js';
import { credentialStore, type StoredLogin } from './credentials.js';
import { ENVIRONMENT, type Environment } from './environment.js';

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

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';

/** A failure the command reports itself, with its exit code. */
export class CliFailure extends Error {
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

/** What every command runs with: its output, the service it talks to, the stored login. */
export interface Context {
  env: Environment;
  io: Io;
  json: boolean;
  store: ReturnType<typeof credentialStore>;
  baseUrl: string;
  api: Api;
  stored: StoredLogin | undefined;
}

/** Wraps a command's action: it is called with the context, then commander's arguments. */
export type Run = (fn: (ctx: Context, ...args: never[]) => Promise<void>) => (this: Command, ...args: unknown[]) => Promise<void>;

export function runner(io: Io, env: Environment): Run {
  return (fn) =>
    async function action(this: Command, ...args: unknown[]) {
      const ctx = await context(this, io, env);
      await (fn as (ctx: Context, ...a: unknown[]) => Promise<void>)(ctx, ...args);
    };
}

async function context(cmd: Command, io: Io, env: Environment): Promise<Context> {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const store = credentialStore(env.configDir);
  const stored = await store.read();
  const baseUrl = (opts.baseUrl ?? env.baseUrl ?? stored?.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  return { env, io, json: Boolean(opts.json), store, baseUrl, api: createApi(baseUrl), stored };
}

export function print(ctx: Context, json: unknown, human: string) {
  ctx.io.stdout.write(ctx.json ? `${JSON.stringify(json, null, 2)}\n` : `${human}\n`);
}

/** Progress goes to stderr, so stdout stays the result; a spinner only on a terminal. */
export function progress(ctx: Context, message: string) {
  const interactive = !ctx.json && Boolean((ctx.io.stderr as { isTTY?: boolean }).isTTY);
  if (!interactive) {
    if (!ctx.json) ctx.io.stderr.write(`${message}\n`);
    return { update: (_m: string) => {}, stop: (m?: string) => (m && !ctx.json ? ctx.io.stderr.write(`${m}\n`) : undefined) };
  }
  const s = spinner({ output: ctx.io.stderr as NodeJS.WriteStream });
  s.start(message);
  return { update: (m: string) => s.message(m), stop: (m?: string) => s.stop(m) };
}

/** Account-token calls: any 401 says how to fix it (the service's words usually do already). */
export async function asAccount<T>(call: Promise<T>): Promise<T> {
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
export function loginToken(ctx: Context): string {
  if (ctx.env.loginToken) return ctx.env.loginToken;
  if (ctx.stored && ctx.stored.baseUrl === ctx.baseUrl) return ctx.stored.token;
  throw new CliFailure(`Not logged in to ${ctx.baseUrl}. Run \`svc login\` (or set ${ENVIRONMENT.loginToken}).`, EXIT.unauthorized);
}

export function programKey(ctx: Context, option: string | undefined): string {
  const key = option ?? ctx.env.programKey;
  if (!key) throw new CliFailure(`No program API key. Set ${ENVIRONMENT.programKey} or pass --api-key.`, EXIT.usage);
  return key;
}
