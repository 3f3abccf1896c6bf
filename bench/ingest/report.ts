/** The ingest benchmark's report: tables, ratios to the baseline, targets, WAL, rate limits, durability. */
import { fmt, loadText, log } from '../output.js';
import { running, type Child } from '../processes.js';
import type { ClickPhases } from './clicks.js';
import type { PhaseSummary } from './driver.js';
import { runsOf, type PhaseResult } from './phases.js';
import type { IngestSettings } from './settings.js';
import {
  clickCeiling,
  pacedP99,
  SALE_LIMIT_PER_KEY_PER_MIN,
  TARGET_CLICKS_PER_S,
  TARGET_CLICKS_X_BASELINE,
  TARGET_P99_MS,
  TARGET_WRITE_CPU_US,
  TARGET_WRITE_P99_MS,
  TARGET_WRITE_PER_S,
} from './targets.js';
import type { WritePhases } from './writes.js';

function table(rows: PhaseSummary[]) {
  const header = ['phase', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'timeouts', '429'];
  const lines = rows.map((r) => [r.name, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.ok), fmt(r.non2xx), fmt(r.errors), fmt(r.timeouts), fmt(r.tooMany)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  log(`  ${render(header)}`);
  log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const l of lines) log(`  ${render(l)}`);
}

const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');

/** BENCH_PHASES=click: the baseline and the click, each round's ratio and the median's. */
export function reportClickOnly({ baseline, click, rounds, durability }: ClickPhases) {
  log('\nresults (measured runs; warm-up runs are counted only for durability)');
  table([baseline.measured, click.measured]);
  if (click.measured.non2xx > 0) log(`  click status codes: ${JSON.stringify(click.measured.statusCodes)}`);
  const ratio = click.measured.rps / baseline.measured.rps;
  const cpu = (p: PhaseResult) => (p.cpuPerOk === undefined ? 'CPU n/a' : `${fmt(p.cpuPerOk, 1)} µs CPU per 2xx`);
  log(`\n  baseline ${fmt(baseline.measured.rps)} req/s, ${cpu(baseline)}`);
  log(`  click    ${fmt(click.measured.rps)} req/s = ${ratio.toFixed(2)} x baseline (target ${TARGET_CLICKS_X_BASELINE}), ${cpu(click)}` +
    `${click.cpuPerOk !== undefined && baseline.cpuPerOk !== undefined ? ` = ${(click.cpuPerOk / baseline.cpuPerOk).toFixed(2)} x baseline` : ''}`);
  if (click.pgCpuPerOk !== undefined) log(`  click PostgreSQL CPU (the bench database's backends): ${fmt(click.pgCpuPerOk, 1)} µs per 2xx`);
  const ceiling = clickCeiling(click, baseline.measured.rps);
  if (ceiling) log(`  ${ceiling}`);
  if (click.wal) {
    const per = Math.max(1, click.measured.ok);
    log(`  click WAL: ${(click.wal.syncs / per).toFixed(3)} syncs, ${(click.wal.records / per).toFixed(1)} records, ${fmt(click.wal.bytes / per)} bytes per 2xx`);
  }
  log(`  acknowledged clicks ${durability.acknowledged}; found ${durability.idsFound} in clicks, ${durability.eventsFound} in the outbox; every one committed: ${durability.durable ? 'yes' : 'no'}`);
  if (rounds.length > 1) {
    const ratios = rounds.map((r) => r.click.measured.rps / r.baseline.measured.rps);
    log(`  rounds (click/baseline req/s): ${rounds.map((r, i) => `${fmt(r.click.measured.rps)}/${fmt(r.baseline.measured.rps)} = ${ratios[i]!.toFixed(2)}`).join('; ')}`);
    const sorted = [...ratios].sort((a, b) => a - b);
    log(`  median ratio of ${rounds.length} rounds: ${sorted[Math.floor((sorted.length - 1) / 2)]!.toFixed(2)} x baseline (target ${TARGET_CLICKS_X_BASELINE})`);
  }
  log(`  load average after: ${loadText()}`);
}

export interface FullRun {
  settings: IngestSettings;
  clicks: ClickPhases;
  writes: WritePhases;
  ipsAllocated: number;
  service: Child;
  started: number;
}

function reportRuns({ settings, clicks, writes }: FullRun) {
  const phases = [clicks.baseline, clicks.click, writes.sale, writes.lead, writes.refund];
  log('\nresults (measured runs; warm-up runs are counted only for durability)');
  table(phases.map((p) => p.measured));
  const warmRows = phases.map((p) => p.warm).filter((w): w is PhaseSummary => w !== undefined);
  if (warmRows.length) {
    log('\nwarm-up runs');
    table(warmRows);
  }
  const pacedRows = [writes.sale, writes.lead, writes.refund].map((p) => p.paced).filter((w): w is PhaseSummary => w !== undefined);
  log(`\nat the target rate: ${fmt(TARGET_WRITE_PER_S)}/s on a fixed schedule for ${settings.duration} s (open loop), latency from each request's slot`);
  log('  phase            2xx   of scheduled  p50 ms  p99 ms  max ms  sends late p99 ms');
  for (const p of pacedRows) {
    const l = p.paced!;
    log(`  ${p.name.padEnd(14)}  ${fmt(p.ok).padStart(6)}  ${fmt(l.rate * p.duration).padStart(12)}  ${fmt(l.p50, 1).padStart(6)}  ${fmt(l.p99, 1).padStart(6)}` +
      `  ${fmt(l.max, 1).padStart(6)}  ${fmt(l.lagP99, 1).padStart(17)}`);
  }
  for (const p of [...phases.map((x) => x.measured), ...warmRows, ...pacedRows]) {
    if (p.non2xx > 0) log(`  ${p.name} status codes: ${JSON.stringify(p.statusCodes)}`);
  }
}

function reportTargets({ settings, clicks, writes }: FullRun) {
  const { baseline, click } = clicks;
  const writePhases = [writes.sale, writes.lead, writes.refund];
  const baseRps = baseline.measured.rps;
  const baseCpu = baseline.cpuPerOk;
  const xBase = (rps: number) => `${(rps / baseRps).toFixed(2)} x baseline`;
  const xCpu = (cpu: number | undefined) => (cpu === undefined || baseCpu === undefined ? 'CPU n/a' : `${fmt(cpu, 1)} µs CPU = ${(cpu / baseCpu).toFixed(2)} x baseline`);
  log('\nrelative to the baseline (bare Fastify, empty POST route, same load; Node CPU per 2xx of the answering process,');
  log('/proc/<pid>/stat, steadier than req/s on a busy machine)');
  log(`  baseline  ${fmt(baseRps)} req/s, ${baseCpu === undefined ? 'CPU n/a' : `${fmt(baseCpu, 1)} µs CPU`}`);
  for (const p of [click, ...writePhases]) {
    log(`  ${p.measured.name.padEnd(8)}  ${fmt(p.measured.rps)} req/s = ${xBase(p.measured.rps)}; ${xCpu(p.cpuPerOk)}`);
  }

  log('\ntargets (reported, not asserted)');
  log(`  clicks >= ${fmt(TARGET_CLICKS_PER_S)}/s: ${fmt(click.measured.rps)}/s  ${verdict(click.measured.rps >= TARGET_CLICKS_PER_S)}`);
  log(`  click p99 <= ${TARGET_P99_MS} ms: ${fmt(click.measured.p99, 1)} ms  ${verdict(click.measured.p99 <= TARGET_P99_MS)}`);
  log(`  clicks >= ${TARGET_CLICKS_X_BASELINE} x baseline: ${xBase(click.measured.rps)}  ${verdict(click.measured.rps >= TARGET_CLICKS_X_BASELINE * baseRps)}`);
  const ceiling = clickCeiling(click, baseRps);
  if (ceiling) log(`    ${ceiling}`);
  for (const p of writePhases) {
    const name = `${p.measured.name}s`.padEnd(7);
    const atRate = pacedP99(p.paced);
    log(`  ${name} >= ${fmt(TARGET_WRITE_PER_S)}/s: ${fmt(p.measured.rps)}/s (${xBase(p.measured.rps)})  ${verdict(p.measured.rps >= TARGET_WRITE_PER_S)}; ` +
      `p99 at ${fmt(TARGET_WRITE_PER_S)}/s <= ${TARGET_WRITE_P99_MS} ms: ${atRate === undefined ? 'not valid (schedule not kept, or non-2xx)' : `${fmt(atRate, 1)} ms`}  ` +
      `${verdict(atRate !== undefined && atRate <= TARGET_WRITE_P99_MS)} (saturated, ${settings.connections} connections: ${fmt(p.measured.p99, 1)} ms); ` +
      `CPU <= ${TARGET_WRITE_CPU_US} µs: ${p.cpuPerOk === undefined ? 'n/a' : `${fmt(p.cpuPerOk, 1)} µs`}  ${verdict(p.cpuPerOk !== undefined && p.cpuPerOk <= TARGET_WRITE_CPU_US)}`);
  }
  for (const p of [writes.lead, writes.refund]) {
    if (p.exhausted) log(`  ${p.measured.name}: the pool ran out, later requests reused an item: their figures are not valid (set BENCH_WRITE_POOL)`);
  }
}

function reportPostgres({ clicks, writes, ipsAllocated }: FullRun) {
  log('\nPostgreSQL WAL during the measured runs (cluster-wide pg_stat_wal; commit cost) and the bench database\'s transactions (statements: round trips)');
  for (const p of [clicks.click, writes.sale, writes.lead, writes.refund]) {
    if (!p.wal) {
      log(`  ${p.measured.name}: pg_stat_wal not available`);
      continue;
    }
    const per = Math.max(1, p.measured.ok);
    log(`  ${p.measured.name}: ${fmt(p.wal.syncs)} WAL syncs (${(p.wal.syncs / per).toFixed(2)} per 2xx), ` +
      `${(p.wal.records / per).toFixed(1)} records and ${fmt(p.wal.bytes / per)} bytes per 2xx; ${(p.wal.xacts / per).toFixed(2)} transactions per 2xx`);
  }

  const phases = [clicks.baseline, clicks.click, writes.sale, writes.lead, writes.refund];
  const tooMany = phases.flatMap((p) => runsOf(p)).reduce((n, p) => n + p.tooMany, 0);
  log('\nrate limits');
  log(`  429 responses in all runs: ${tooMany}${tooMany === 0 ? '' : '  <- the load hit the service limits: the figures above are not valid'}`);
  log(`  sale and refund requests per key: max ${Math.max(...writes.perKey)} over ${writes.programCount} keys (limit ${SALE_LIMIT_PER_KEY_PER_MIN}/min per key); ` +
    `client IPs: a distinct one per request, ${fmt(ipsAllocated)} allocated`);
}

function reportDurability({ clicks, writes }: FullRun) {
  const c = clicks.durability;
  const { sales, leads, refunds } = writes;
  log('\ndurability');
  log(`  acknowledged clicks (smoke 1 + warm-up ${clicks.click.warm?.ok ?? 0} + measured ${clicks.click.measured.ok}): ${c.acknowledged}`);
  log(`  rows in clicks: ${c.rows}; outbox click.recorded rows: ${c.eventRows}` +
    `${c.rows > c.acknowledged ? ` (${c.rows - c.acknowledged} more: requests in flight when the load stopped, committed but never acknowledged)` : ''}`);
  log(`  acknowledged click ids found (read from every 2xx body): ${c.idsFound} of ${c.distinctIds} in clicks, ${c.eventsFound} in the outbox` +
    `${c.unreadable ? `; 2xx bodies without a click_id: ${c.unreadable}` : ''}`);
  log(`  every acknowledged click committed: ${c.durable ? 'yes' : 'no'}`);
  log(`  acknowledged sales (warm-up ${writes.sale.warm?.ok ?? 0} + measured ${writes.sale.measured.ok} + at the target rate ${writes.sale.paced?.ok ?? 0}): ${sales.acknowledged}; bench sale rows: ${sales.rows}; ` +
    `acknowledged transaction ids found: ${sales.idsFound} of ${sales.ids}; outbox sale.recorded rows: ${sales.eventRows}; commissions: ${sales.commissionRows}` +
    `${sales.unreadable ? `; 2xx bodies without a transaction_id: ${sales.unreadable}` : ''}`);
  log(`  every acknowledged sale committed: ${sales.durable ? 'yes' : 'no'}`);
  log(`  acknowledged leads: ${leads.acknowledged}; found as customers with their key: ${leads.found}; every one committed: ${leads.durable ? 'yes' : 'no'}`);
  log(`  acknowledged refunds: ${refunds.acknowledged} (${refunds.distinct} distinct sales); their sales refunded with a refund row: ${refunds.found}; ` +
    `every one committed: ${refunds.durable ? 'yes' : 'no'}`);
}

/** Every phase: tables, ratios, targets, PostgreSQL's share, rate limits, durability, the service's complaints. */
export function reportFullRun(run: FullRun) {
  reportRuns(run);
  reportTargets(run);
  reportPostgres(run);
  reportDurability(run);
  const serviceLogLines = run.service.tail.filter((l) => l.includes('"level"'));
  if (serviceLogLines.length) {
    log('\nservice warnings/errors (last lines)');
    for (const l of serviceLogLines.slice(-10)) log(`  ${l.slice(0, 400)}`);
  }
  if (!running(run.service)) log(`\nthe service exited during the run:\n${run.service.tail.join('\n')}`);
  log(`\nrun time before cleanup: ${((Date.now() - run.started) / 1000).toFixed(1)} s`);
}
