import type { Command } from 'commander';
import { ENVIRONMENT } from '../environment.js';
import { print, programKey, type Context, type Run } from '../context.js';
import type { StatusData } from '../wire.js';

async function status(ctx: Context, o: { apiKey?: string }) {
  const s = await ctx.api.request<StatusData>('/status', { token: programKey(ctx, o.apiKey) });
  const mark = (v: string) => (v === 'complete' ? '[x]' : '[ ]');
  const human = [
    `Program ${s.programId}`,
    `${mark(s.stepStatuses.pageview)} pageview   ${s.statistics.pageview.testEventCount} test click(s)`,
    `${mark(s.stepStatuses.referrals)} referrals  ${s.statistics.referrals.testEventCount} test lead(s)`,
    `${mark(s.stepStatuses.payments)} payments   mode ${s.statistics.payments.paymentTrackingMode}, processor ${s.statistics.payments.processorConnectionStatus}`,
    `partners: ${s.hasPartners ? 'yes' : 'none approved yet'}`,
  ].join('\n');
  print(ctx, s, human);
}

/** svc status: the integration checklist of the program key's program. */
export function addStatusCommand(program: Command, run: Run) {
  program
    .command('status')
    .description(`Integration status of the program of the API key ($${ENVIRONMENT.programKey})`)
    .option('--api-key <key>', `program API key (default: $${ENVIRONMENT.programKey})`)
    .action(run(status));
}
