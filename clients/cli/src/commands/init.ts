import { isCancel, select, text } from '@clack/prompts';
import { Option, type Command } from 'commander';
import { asAccount, CliFailure, EXIT, loginToken, print, type Context, type Run } from '../context.js';
import type { InitData, InitRequest } from '../wire.js';

const COMMISSION_TYPES = ['percent', 'fixed', 'recurring_percent', 'recurring_fixed'] as const;

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

async function init(ctx: Context, o: InitOptions) {
  const token = loginToken(ctx);
  const f = await completeInit(ctx, o);
  // The service judges the commission type (a prompt or a flag with fixed choices gave it).
  const commissionType = f.commissionType as InitRequest['commission_type'];
  const body: InitRequest = { name: f.name, domain: f.domain, commission_type: commissionType, commission_rate: Number(f.commissionRate) };
  if (f.advertiserId !== undefined) body.advertiser_id = Number(f.advertiserId);
  const created = await asAccount(ctx.api.request<InitData>('/init', { method: 'POST', token, body }));
  print(ctx, created, `Created program #${created.program.id} ${created.program.name} (${created.program.domain})\n\nNext:\n${created.next_steps.map((s) => `  - ${s}`).join('\n')}`);
}

/** svc init: create a program with the account login token. */
export function addInitCommand(program: Command, run: Run) {
  program
    .command('init')
    .description('Create a program (asks for missing fields on a terminal)')
    .option('--name <name>')
    .option('--domain <domain>')
    .addOption(new Option('--commission-type <type>').choices(COMMISSION_TYPES))
    .option('--commission-rate <rate>')
    .option('--advertiser-id <id>', 'when your account belongs to several advertisers')
    .action(run(init));
}
