import type { Command } from 'commander';
import { ENVIRONMENT } from '../environment.js';
import { CliFailure, EXIT, print, programKey, progress, type Context, type Run } from '../context.js';
import type { TestEventData, TestEventRequest } from '../wire.js';

async function testEvent(ctx: Context, type: string | undefined, o: { chain?: boolean; apiKey?: string }) {
  if (o.chain && type) throw new CliFailure('Give an event type or --chain, not both.', EXIT.usage);
  if (!o.chain && !type) throw new CliFailure('Give an event type (click, lead, sale) or --chain.', EXIT.usage);
  const token = programKey(ctx, o.apiKey);
  const wait = progress(ctx, o.chain ? 'Running the click, lead, sale chain...' : `Sending a test ${type}...`);
  let result: TestEventData;
  try {
    const body: TestEventRequest = o.chain ? { type: 'chain' } : { event_type: type };
    result = await ctx.api.request<TestEventData>('/test-event', { method: 'POST', token, body });
  } finally {
    wait.stop();
  }
  const describe = (step: string, recorded: Record<string, unknown>) => `  ${step.padEnd(6)} ${Object.entries(recorded).map(([k, v]) => `${k}=${String(v)}`).join(' ')}`;
  const human =
    result.mode === 'chain'
      ? `Chain recorded (test mode):\n${result.steps.map((s) => describe(s.step, s.recorded)).join('\n')}\n${result.chains_left_this_hour} chain(s) left this hour`
      : `Test ${result.event_type} recorded:\n${describe(result.event_type, result.recorded)}`;
  print(ctx, result, human);
}

/** svc test-event: one synthetic click, lead or sale, or the whole chain, with the program key. */
export function addTestEventCommand(program: Command, run: Run) {
  program
    .command('test-event')
    .description('Send a synthetic test event (click, lead or sale), or the whole chain with --chain')
    .argument('[type]', 'click, lead or sale')
    .option('--chain', 'run click, lead and sale in a row (10 per program per hour)')
    .option('--api-key <key>', `program API key (default: $${ENVIRONMENT.programKey})`)
    .action(run(testEvent));
}
