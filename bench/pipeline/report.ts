/** The pipeline benchmark's summary: every throughput run beside the broker's baseline, the targets, freshness. */
import { fmtFinite as fmt, loadText, log, ratio } from '../output.js';
import { ceilingLine, perThousand } from './cpu.js';
import type { FreshnessRun } from './freshness.js';
import type { BaselineResult } from './kafka.js';
import type { PipelineSettings } from './settings.js';
import type { ThroughputRun } from './throughput.js';
import { warehouseLabel } from './warehouses.js';

/** Issue 3's floor, end to end. */
const TARGET_EVENTS_PER_S = 20_000;
/** Issue 14: relay and loader together at least this share of the bare produce rate, the loader alone of the bare consume rate. */
const TARGET_END_TO_END_X_PRODUCE = 0.5;
const TARGET_LOADER_X_CONSUME = 0.5;
/** Issue 14: freshness p99 at BENCH_RATE clicks/s (1,000 by default). */
const TARGET_FRESHNESS_P99_MS = 1_000;

const verdict = (met: boolean) => (met ? 'met' : 'MISSED');

function throughputTable(baseline: BaselineResult, throughput: ThroughputRun[]) {
  log(`  baseline (kafkajs alone, same messages): produce ${fmt(baseline.producePerS)}/s, consume ${fmt(baseline.consumePerS)}/s`);
  log(`  ${'run'.padEnd(44)}${'relay/s'.padStart(10)}${'x prod'.padStart(8)}${'loader/s'.padStart(10)}${'x cons'.padStart(8)}${'e2e/s'.padStart(10)}${'x prod'.padStart(8)}`);
  for (const r of throughput) {
    log(`  ${r.label.padEnd(44)}${(r.relay ? fmt(r.relay.perS) : '').padStart(10)}${(r.relay ? ratio(r.relay.perS, baseline.producePerS) : '').padStart(8)}` +
      `${(r.loader ? fmt(r.loader.perS) : '').padStart(10)}${(r.loader ? ratio(r.loader.perS, baseline.consumePerS) : '').padStart(8)}` +
      `${(r.endToEndPerS ? fmt(r.endToEndPerS) : '').padStart(10)}${(r.endToEndPerS ? ratio(r.endToEndPerS, baseline.producePerS) : '').padStart(8)}`);
  }
  log(`  (x prod / x cons: against the baseline's produce / consume rate; end to end against its produce rate, as issue 14 sets it)`);
}

/** Over HTTP the engine works in the server's process: its CPU, beside the loader's. */
const server = (r: ThroughputRun, events: number) =>
  r.cpu.ms.clickhouse === undefined ? '' : `, ClickHouse server ${fmt(perThousand(r.cpu.ms.clickhouse, events), 1)}`;

function throughputTargets(baseline: BaselineResult, throughput: ThroughputRun[]) {
  log(`  targets, each beside this run's baseline:`);
  for (const r of throughput.filter((t) => t.endToEndPerS)) {
    const x = r.endToEndPerS! / baseline.producePerS;
    const events = r.loader!.events;
    log(`  ${r.label}: ${fmt(r.endToEndPerS!)} events/s end to end = ${x.toFixed(2)}x the bare produce (${fmt(baseline.producePerS)}/s); ` +
      `target >= ${TARGET_END_TO_END_X_PRODUCE.toFixed(2)}x: ${verdict(x >= TARGET_END_TO_END_X_PRODUCE)}; ` +
      `target >= ${fmt(TARGET_EVENTS_PER_S)} events/s: ${verdict(r.endToEndPerS! >= TARGET_EVENTS_PER_S)}`);
    log(`    CPU ms per 1,000 events: relay ${fmt(perThousand(r.cpu.ms.relay, events), 1)} (bare produce ${fmt(baseline.produceCpuPerThousand, 1)}, ` +
      `${ratio(perThousand(r.cpu.ms.relay, events), baseline.produceCpuPerThousand)}), loader ${fmt(perThousand(r.cpu.ms.loader, events), 1)} ` +
      `(bare consume ${fmt(baseline.consumeCpuPerThousand, 1)}, ${ratio(perThousand(r.cpu.ms.loader, events), baseline.consumeCpuPerThousand)})${server(r, events)}`);
    log(`    ${ceilingLine(r.cpu, r.cpuNames, events, baseline.producePerS, TARGET_END_TO_END_X_PRODUCE)}`);
  }
  for (const r of throughput.filter((t) => t.loader && !t.relay)) {
    const x = r.loader!.perS / baseline.consumePerS;
    const cpu = perThousand(r.cpu.ms.loader, r.loader!.events);
    log(`  ${r.label}: ${fmt(r.loader!.perS)} events/s = ${x.toFixed(2)}x the bare consume (${fmt(baseline.consumePerS)}/s); ` +
      `target >= ${TARGET_LOADER_X_CONSUME.toFixed(2)}x: ${verdict(x >= TARGET_LOADER_X_CONSUME)}; ` +
      `CPU ${fmt(cpu, 1)} ms per 1,000 events (bare consume ${fmt(baseline.consumeCpuPerThousand, 1)}, ${ratio(cpu, baseline.consumeCpuPerThousand)})${server(r, r.loader!.events)}`);
    log(`    ${ceilingLine(r.cpu, r.cpuNames, r.loader!.events, baseline.consumePerS, TARGET_LOADER_X_CONSUME)}`);
  }
}

export function reportSummary(options: {
  settings: PipelineSettings;
  baseline: BaselineResult | undefined;
  throughput: ThroughputRun[];
  fresh: FreshnessRun[];
  failed: boolean;
  started: number;
}) {
  const { settings, baseline, throughput, fresh, failed } = options;
  log('\nsummary');
  if (baseline) {
    throughputTable(baseline, throughput);
    throughputTargets(baseline, throughput);
  }
  for (const r of fresh) {
    const met = r.freshnessMs.p99 < TARGET_FRESHNESS_P99_MS && r.found === r.acked;
    log(`  freshness (${r.client}, ${warehouseLabel(r.warehouse)}) at ${fmt(r.sentPerS)} clicks/s: p99 ${fmt(r.freshnessMs.p99)} ms (p50 ${fmt(r.freshnessMs.p50)}), ${fmt(r.found)}/${fmt(r.acked)} found; ` +
      `target p99 < ${fmt(TARGET_FRESHNESS_P99_MS)} ms at ${fmt(settings.rate)}/s with every click found: ${met ? 'met' : 'MISSED'}`);
  }
  log(`  ${failed ? 'FAILED: events missing from the warehouse' : 'every event and every acknowledged click reached the warehouse'}`);
  log(`  total time ${fmt((Date.now() - options.started) / 1000)} s, load average ${loadText()}`);
}
