import type { Command } from 'commander';
import { asAccount, loginToken, print, type Context, type Run } from '../context.js';
import type { ProgramItem } from '../wire.js';

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

async function programs(ctx: Context) {
  const rows = await asAccount(ctx.api.request<ProgramItem[]>('/programs', { token: loginToken(ctx) }));
  const human = rows.length
    ? table([
        ['ID', 'NAME', 'DOMAIN', 'COMMISSION', 'ADVERTISER', 'API KEY'],
        ...rows.map((p) => [String(p.id), p.name, p.domain, `${p.commission_rate} ${p.commission_type}`, `${p.advertiser_name} (#${p.advertiser_id})`, p.api_token_masked ?? '-']),
      ])
    : 'No programs yet. Create one with `svc init`.';
  print(ctx, rows, human);
}

/** svc programs: the programs of the logged-in account's advertisers. */
export function addProgramsCommand(program: Command, run: Run) {
  program.command('programs').description('List your programs').action(run(programs));
}
