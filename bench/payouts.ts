/**
 * Payouts benchmark (npm run bench:payouts; issue 34, point 8). Not a test: it prints each figure
 * beside its target.
 *
 * On a throw-away PostgreSQL database (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/
 * postgres; ats_bench_<hex>, dropped at the end), one program with BENCH_PARTNERS partners (10,000)
 * and BENCH_COMMISSIONS commissions (1,000,000) over the last 60 days, seeded with set-based SQL
 * (generate_series, not HTTP): their sales, the ledger's commission entries, reversals for 4 %,
 * 1 % still inside their hold, 1 % whose hold ended and that no sweep has written yet, and one
 * outstanding clawback and one manual entry per 10 partners. Then, each timed alone:
 *
 *   - a payout run (create_payouts: the holds that ended written down, one payout per partner and
 *     currency over the minimum with the commissions it covers, entries netted; the covered
 *     commissions read processing through their payout, no commission row is written);
 *   - the month's statement (every entry of the program read for the opening balance, the month's
 *     entries by kind, the program's sales and refunds);
 *   - one partner's balance, and one payout marked paid.
 *
 * Each figure is wall time and the CPU time of the PostgreSQL backend that ran it (/proc; on a
 * machine other work shares, the wall time grows with the load, the CPU time far less).
 * Targets: payout run and statement under 10 s each on 2 cores. Baselines of the same run: the
 * bare reads under each (one GROUP BY over the same rows, nothing written), so a figure can be
 * read against what this machine, at this moment, takes to read the data at all.
 */
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { openDatabase, sql, type Database } from '../core/db.js';
import { migrate } from '../core/migrate.js';
import { addMember, createWorkspace } from '../domain/access/workspaces.js';
import { partnerBalances } from '../domain/ledger/balances.js';
import { createPayouts, settlePayout } from '../domain/ledger/payouts.js';
import { statement } from '../domain/ledger/statements.js';
import { createProgram } from '../domain/programs/programs.js';
import { systemContext } from '../domain/audit/audit.js';
import { fmt, loadText, log } from './output.js';
import { createBenchDatabase, databaseUrl, DEFAULT_ADMIN_URL, dropBenchDatabase, intSetting, processCpuMicros } from './setup.js';

const ADMIN_URL = process.env.DATABASE_URL || DEFAULT_ADMIN_URL;
const PARTNERS = intSetting('BENCH_PARTNERS', 10_000, 10, 1_000_000);
const COMMISSIONS = intSetting('BENCH_COMMISSIONS', 1_000_000, 100, 20_000_000);
const TARGET_MS = 10_000;

const seed = {
  partners: sql(
    'bench_payouts.partners',
    `WITH p AS (INSERT INTO partners (name, email) SELECT 'Partner ' || g, 'partner' || g || '@bench.example' FROM generate_series(1, $2) g RETURNING id)
     INSERT INTO partner_programs (partner_id, program_id) SELECT id, $1 FROM p`,
  ),
  // The sales: created over the last 60 days, 1 to 250 USD.
  sales: sql(
    'bench_payouts.sales',
    `INSERT INTO sale_events (program_id, partner_id, transaction_id, amount_cents, currency, occurred_at, created_at)
     SELECT $1, pp.partner_id, 'bench-' || g, 100 + (g::bigint * 7919) % 25000, 'USD', t, t
       FROM generate_series(1, $2) g
       JOIN LATERAL (SELECT now() - ((g % 5184000) * interval '1 second') AS t) x ON true
       JOIN (SELECT partner_id, row_number() OVER (ORDER BY partner_id) - 1 AS n FROM partner_programs WHERE program_id = $1) pp ON pp.n = g % $3`,
  ),
  // Their commissions at 10 %, with a 30-day hold: 1 % inside it, 1 % past it but not written by a sweep, 4 % reversed, the rest approved.
  commissions: sql(
    'bench_payouts.commissions',
    `INSERT INTO commissions (sale_id, program_id, partner_id, commission_type, commission_rate, amount_cents, currency, status, created_at,
                              available_at, approved_at, reversed_at, in_hold)
     SELECT s.id, s.program_id, s.partner_id, 'percent', 10, round(s.amount_cents * 0.1), s.currency,
            CASE WHEN h % 100 = 0 THEN 'pending' WHEN h % 100 = 1 THEN 'pending' WHEN h % 25 = 2 THEN 'reversed' ELSE 'approved' END,
            s.created_at,
            CASE WHEN h % 100 = 0 THEN now() + interval '10 days' WHEN h % 100 = 1 THEN now() - interval '1 hour' ELSE s.created_at - interval '30 days' END,
            CASE WHEN h % 100 IN (0, 1) OR h % 25 = 2 THEN NULL ELSE s.created_at - interval '30 days' END,
            CASE WHEN h % 25 = 2 THEN s.created_at + interval '1 day' END,
            h % 100 IN (0, 1)
       FROM (SELECT *, abs(hashtext(transaction_id)) AS h FROM sale_events WHERE program_id = $1) s`,
  ),
  entries: sql(
    'bench_payouts.entries',
    `INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, cause, created_at, available_at)
     SELECT program_id, partner_id, 'commission', amount_cents, currency, id, sale_id, 'sale:' || sale_id, created_at, available_at
       FROM commissions WHERE program_id = $1 AND amount_cents > 0
     UNION ALL
     SELECT program_id, partner_id, 'reversal', -amount_cents, currency, id, sale_id, 'refund:' || id, reversed_at, reversed_at
       FROM commissions WHERE program_id = $1 AND status = 'reversed' AND amount_cents > 0`,
  ),
  nettable: sql(
    'bench_payouts.nettable',
    `INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, cause, reason, created_at, available_at)
     SELECT $1, partner_id, kind, amount, 'USD', kind || ':bench:' || partner_id, 'bench', now() - interval '2 days', now() - interval '2 days'
       FROM (SELECT partner_id, row_number() OVER (ORDER BY partner_id) AS n FROM partner_programs WHERE program_id = $1) pp,
            (VALUES ('clawback', -700), ('manual', 500)) AS k (kind, amount)
      WHERE pp.n % 10 = 0`,
  ),
  analyze: sql('bench_payouts.analyze', `ANALYZE`),
  // The baselines: the rows each measured step must read at least, summed, nothing written.
  runBaseline: sql(
    'bench_payouts.run_baseline',
    `SELECT partner_id, currency, sum(amount_cents) AS amount FROM commissions
      WHERE program_id = $1 AND status IN ('approved', 'pending') GROUP BY partner_id, currency`,
  ),
  statementBaseline: sql(
    'bench_payouts.statement_baseline',
    `SELECT partner_id, currency, kind, sum(amount_minor) AS amount FROM ledger_entries WHERE program_id = $1 GROUP BY partner_id, currency, kind`,
  ),
  sizes: sql(
    'bench_payouts.sizes',
    `SELECT (SELECT count(*) FROM commissions)::int AS commissions, (SELECT count(*) FROM ledger_entries)::int AS entries,
            (SELECT count(*) FROM partner_programs)::int AS partners`,
  ),
};

/** The PostgreSQL backend of the benchmark's one connection: its CPU time is the figure a busy machine moves least. */
let backendPid: number | undefined;

async function timed<T>(what: string, fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const cpuBefore = backendPid ? processCpuMicros(backendPid) : undefined;
  const start = performance.now();
  const value = await fn();
  const ms = performance.now() - start;
  const cpuAfter = backendPid ? processCpuMicros(backendPid) : undefined;
  const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? `, PostgreSQL backend CPU ${fmt((cpuAfter - cpuBefore) / 1000)} ms` : '';
  log(`  ${what}: ${fmt(ms)} ms${cpu}`);
  return { value, ms };
}

async function seedProgram(db: Database): Promise<number> {
  const workspaceId = await createWorkspace(db, 'Payouts bench');
  await addMember(db, workspaceId, 'owner@bench.example', 'owner');
  const program = await createProgram(db, workspaceId, {
    name: 'Payouts bench', domain: 'shop.bench.example', commission_type: 'percent', commission_rate: 10, attribution_window_days: 60,
    lead_auth: 'server_required', paymentTrackingMode: 's2s', allowed_origins: [],
  }, systemContext('bench'));
  const programId = Number(program.id);
  await timed(`${fmt(PARTNERS)} partners`, () => db.many(seed.partners, [programId, PARTNERS]));
  await timed(`${fmt(COMMISSIONS)} sales`, () => db.many(seed.sales, [programId, COMMISSIONS, PARTNERS]));
  await timed('their commissions', () => db.many(seed.commissions, [programId]));
  await timed('the ledger (commission and reversal entries)', () => db.many(seed.entries, [programId]));
  await timed('outstanding clawbacks and manual entries', () => db.many(seed.nettable, [programId]));
  await timed('ANALYZE', () => db.many(seed.analyze));
  return programId;
}

const verdict = (ms: number, baselineMs: number) =>
  `${fmt(ms)} ms (target < ${fmt(TARGET_MS)} ms)  ${ms < TARGET_MS ? 'PASS' : 'MISS'}; baseline ${fmt(baselineMs)} ms (${fmt(ms / baselineMs, 1)}x)`;

async function main() {
  const name = `ats_bench_${randomBytes(6).toString('hex')}`;
  log(`payouts benchmark: ${cpus().length} CPUs, load average ${loadText()}; ${fmt(PARTNERS)} partners, ${fmt(COMMISSIONS)} commissions`);
  await createBenchDatabase(ADMIN_URL, name);
  // One connection: every measured statement runs on the backend whose CPU is read.
  const db = await openDatabase({ kind: 'postgres', url: databaseUrl(ADMIN_URL, name), poolSize: 1 });
  try {
    await migrate(db);
    backendPid = (await db.one<{ pid: number }>(sql('bench_payouts.pid', `SELECT pg_backend_pid() AS pid`)))!.pid;
    const version = (await db.one<{ v: string }>(sql('bench_payouts.version', `SELECT version() AS v`)))!.v;
    log(`database ${name} (${version.split(' on ')[0]})`);
    log('seeding (set-based SQL)');
    const programId = await seedProgram(db);
    const sizes = (await db.one<{ commissions: number; entries: number; partners: number }>(seed.sizes))!;
    log(`  ${fmt(sizes.partners)} partners, ${fmt(sizes.commissions)} commissions, ${fmt(sizes.entries)} ledger entries`);

    log('\nbaselines (the bare reads: one GROUP BY over the same rows, nothing written)');
    const runBase = await timed('approved and pending commissions per partner and currency', () => db.many(seed.runBaseline, [programId]));
    const stBase = await timed('ledger entries per partner, currency and kind', () => db.many(seed.statementBaseline, [programId]));

    log('\nmeasured (each alone, one after the other)');
    const run = await timed('payout run', () => createPayouts(db, programId, new Date(), undefined, systemContext('bench')));
    const covered = run.value.payouts.reduce((n, p) => n + p.commission_ids.length, 0);
    const netted = run.value.payouts.reduce((n, p) => n + p.clawback_entry_ids.length + p.manual_entry_ids.length, 0);
    log(`    ${fmt(run.value.payouts.length)} payouts, ${fmt(covered)} commissions covered, ${fmt(netted)} entries netted`);
    const period = new Date().toISOString().slice(0, 7);
    const st = await timed(`statement ${period}`, () => statement(db, programId, period));
    log(`    ${fmt(st.value.partners.length)} partner lines; totals ${JSON.stringify(st.value.totals)}`);
    const previous = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 15)).toISOString().slice(0, 7);
    const st2 = await timed(`statement ${previous}`, () => statement(db, programId, previous));
    const partnerId = run.value.payouts[0]?.partner_id ?? 1;
    await timed(`balance of partner ${partnerId}`, () => partnerBalances(db, programId, partnerId));
    if (run.value.payouts[0]) await timed('mark one payout paid', () => settlePayout(db, programId, run.value.payouts[0]!.id, 'paid', 'BENCH-1', systemContext('bench')));

    log('\ntargets');
    log(`  payout run over ${fmt(COMMISSIONS)} commissions of ${fmt(PARTNERS)} partners: ${verdict(run.ms, runBase.ms)}`);
    log(`  statement of that program (${period}): ${verdict(st.ms, stBase.ms)}`);
    log(`  statement of ${previous}: ${verdict(st2.ms, stBase.ms)}`);
  } finally {
    await db.close();
    await dropBenchDatabase(ADMIN_URL, name);
    log(`\ndropped database ${name}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
