import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { ServiceError, UnreachableError } from './api.js';
import { addInitCommand } from './commands/init.js';
import { addLoginCommands } from './commands/login.js';
import { addPayoutsCommand } from './commands/payouts.js';
import { addProgramsCommand } from './commands/programs.js';
import { addStatusCommand } from './commands/status.js';
import { addTestEventCommand } from './commands/test-event.js';
import { CliFailure, DEFAULT_BASE_URL, EXIT, runner, type Io } from './context.js';
import { ENVIRONMENT, readEnvironment, type Environment } from './environment.js';

export { EXIT, type Io } from './context.js';

// src/ and dist/ both sit beside package.json.
const VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

const exitCodeOf = (error: ServiceError) => {
  if (error.status === 401) return EXIT.unauthorized;
  if (error.status === 403) return EXIT.forbidden;
  if (error.status === 404 || error.status === 410) return EXIT.notFound;
  if (error.status === 429) return EXIT.rateLimited;
  if (error.status >= 500) return EXIT.serverError;
  return EXIT.failure;
};

/** The svc program. `io` and `env` are injectable so tests can run it in-process too. */
export function buildProgram(io: Io, env: Environment = readEnvironment()): Command {
  const program = new Command('svc')
    .description('Command line for the affiliate tracking service (beta): log in, create programs, check status, send test events, read payouts.')
    .addOption(new Option('--base-url <url>', `service URL (default: $${ENVIRONMENT.baseUrl}, the logged-in service, or ${DEFAULT_BASE_URL})`))
    .option('--json', 'machine-readable output on stdout')
    .version(VERSION)
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();

  const run = runner(io, env);
  addLoginCommands(program, run);
  addProgramsCommand(program, run);
  addPayoutsCommand(program, run);
  addInitCommand(program, run);
  addStatusCommand(program, run);
  addTestEventCommand(program, run);
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
