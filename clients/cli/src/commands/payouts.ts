import { InvalidArgumentError, type Command } from 'commander';
import { asAccount, loginToken, print, type Context, type Run } from '../context.js';
import type { PayoutsData } from '../wire.js';

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** Minor units as major units with two decimals and the currency: 123456 USD is `1234.56 USD`. */
const money = (minor: number, currency: string) => {
  const abs = Math.abs(minor);
  return `${minor < 0 ? '-' : ''}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')} ${currency}`;
};

/** A partner by its name, with its id (names need not be unique). */
const partnerOf = (r: { partner_id: number; partner_name: string | null }) => (r.partner_name === null ? String(r.partner_id) : `${r.partner_name} (${r.partner_id})`);

const programIdOf = (value: string) => {
  if (!/^[1-9][0-9]{0,14}$/.test(value)) throw new InvalidArgumentError('a program id is a positive integer');
  return Number(value);
};

async function payouts(ctx: Context, programId: number) {
  const d = await asAccount(ctx.api.request<PayoutsData>(`/programs/${programId}/payouts`, { token: loginToken(ctx) }));
  const balances = d.balances.length
    ? table([
        ['PARTNER', 'PENDING', 'HELD', 'APPROVED', 'PROCESSING', 'PAID', 'BALANCE'],
        ...d.balances.map((b) => [
          partnerOf(b), money(b.pending, b.currency), money(b.held, b.currency), money(b.approved, b.currency),
          money(b.processing, b.currency), money(b.paid, b.currency), money(b.balance, b.currency),
        ]),
      ])
    : 'No partner has a balance yet.';
  const list = d.payouts.length
    ? table([
        ['PAYOUT', 'PARTNER', 'AMOUNT', 'STATUS', 'COMMISSIONS', 'CREATED', 'REFERENCE'],
        ...d.payouts.map((p) => [p.id, partnerOf(p), money(p.amount_minor, p.currency), p.status, String(p.commissions), p.created_at, p.reference ?? '-']),
      ])
    : 'No payouts yet. An owner creates them in the console (POST .../payouts).';
  print(ctx, d, `Balances of program ${d.program_id}\n${balances}\n\nPayouts (latest 50)\n${list}`);
}

/** svc payouts <programId>: a program's partners' balances and its latest payouts (account login). */
export function addPayoutsCommand(program: Command, run: Run) {
  program
    .command('payouts')
    .description("A program's partner balances and latest payouts (read-only)")
    .argument('<programId>', 'the program id (svc programs lists them)', programIdOf)
    .action(run(payouts));
}
