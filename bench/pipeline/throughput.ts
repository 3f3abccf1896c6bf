/**
 * Throughput over the multiplied outbox: the broker's ceiling (the same Avro messages through
 * kafkajs alone), then the relay alone per client, the loader alone from full topics, and relay
 * and loader together per client. The relay starts gated, so start-up costs stay outside the figures.
 */
import { createAvroCodec } from '../../processors/avro/codec.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import { fmtFinite as fmt, loadText, log, ratio } from '../output.js';
import { cpuLine, cpuSnapshot, cpuUse, type CpuUse } from './cpu.js';
import { drain, DRAIN_TIMEOUT_MS, holdGate, loaderJoined, releaseGate, resetOutbox } from './drain.js';
import { loaderFigures, missingEvents, relayFigures, type LoaderFigures, type RelayFigures } from './figures.js';
import { CONSUME_ROUNDS, kafkaConfig, runBaseline, type BaselineResult } from './kafka.js';
import type { Bench } from './lifecycle.js';
import { encodedOutbox } from './outbox.js';
import { startRelay, startService, stopService } from './services.js';
import type { Client } from './settings.js';
import { runWarehouse, warehouseLabel, type WarehouseKind } from './warehouses.js';

export interface ThroughputRun {
  label: string;
  client: Client;
  /** Where the loader wrote (none for the relay alone). */
  warehouse?: WarehouseKind;
  relay?: RelayFigures;
  loader?: LoaderFigures;
  /** Events over the time from the relay's first batch to the last row inserted. */
  endToEndPerS?: number;
  cpu: CpuUse;
  cpuNames: string[];
  problems: string[];
}

async function relayAlone(bench: Bench, client: Client, prefix: string): Promise<ThroughputRun> {
  const { db } = bench;
  await holdGate(bench);
  const relay = await startRelay(bench, `relay (${client})`, { KAFKA_CLIENT: client, KAFKA_TOPIC_PREFIX: prefix });
  const before = await cpuSnapshot(db, { relay: relay.child });
  await releaseGate(bench);
  await drain(bench, { relay });
  const after = await cpuSnapshot(db, { relay: relay.child });
  await stopService(bench.run, relay);
  const figures = await relayFigures(db);
  return { label: `relay alone, ${client}`, client, relay: figures, cpu: cpuUse(before, after), cpuNames: ['relay', 'postgres', 'broker'], problems: [] };
}

async function loaderAlone(bench: Bench, prefix: string, outbox: Map<string, number>, kind: WarehouseKind): Promise<ThroughputRun> {
  const { db, run } = bench;
  const groupId = `${run.prefix}loader_alone_${kind}`;
  run.groups.push(groupId);
  const warehouse = await runWarehouse(bench, kind, `loader_alone_${kind}`);
  const topics = topicsOf(createAvroCodec(), prefix).events;
  const loader = await startService(bench, 'loader', `loader (${warehouseLabel(kind)})`, { KAFKA_TOPIC_PREFIX: prefix, LOADER_GROUP_ID: groupId, ...warehouse.env });
  // `main.ts loader` prints its ready line once the consumer has joined its group (kafkajs run()).
  const joinedAtMs = Date.now();
  const before = await cpuSnapshot(db, { loader: loader.child }, warehouse.cpuPids());
  await drain(bench, { loader, groupId, topics });
  const after = await cpuSnapshot(db, { loader: loader.child }, warehouse.cpuPids());
  await stopService(run, loader);
  const tables = await warehouse.summary();
  return {
    label: `loader alone (kafkajs), ${warehouseLabel(kind)}`,
    client: 'kafkajs',
    warehouse: kind,
    loader: loaderFigures(tables, joinedAtMs),
    cpu: cpuUse(before, after),
    cpuNames: ['loader', ...cpuExtra(kind), 'broker'],
    problems: missingEvents(outbox, tables),
  };
}

async function together(bench: Bench, client: Client, kind: WarehouseKind, outbox: Map<string, number>): Promise<ThroughputRun> {
  const { db, run } = bench;
  const prefix = `${run.prefix}e2e_${client}_${kind}.`;
  const groupId = `${run.prefix}loader_${client}_${kind}`;
  run.groups.push(groupId);
  const warehouse = await runWarehouse(bench, kind, `together_${client}_${kind}`);
  const topics = topicsOf(createAvroCodec(), prefix).events;
  await holdGate(bench);
  const loader = await startService(bench, 'loader', `loader (${client} run, ${warehouseLabel(kind)})`, { KAFKA_TOPIC_PREFIX: prefix, LOADER_GROUP_ID: groupId, ...warehouse.env });
  const relay = await startRelay(bench, `relay (${client})`, { KAFKA_CLIENT: client, KAFKA_TOPIC_PREFIX: prefix });
  await loaderJoined(bench, groupId);
  const before = await cpuSnapshot(db, { relay: relay.child, loader: loader.child }, warehouse.cpuPids());
  await releaseGate(bench);
  await drain(bench, { relay, loader, groupId, topics });
  const after = await cpuSnapshot(db, { relay: relay.child, loader: loader.child }, warehouse.cpuPids());
  await stopService(run, relay);
  await stopService(run, loader);
  const relayed = await relayFigures(db);
  const tables = await warehouse.summary();
  const loaded = loaderFigures(tables);
  return {
    label: `relay + loader, ${client}, ${warehouseLabel(kind)}`,
    client,
    warehouse: kind,
    relay: relayed,
    loader: loaded,
    endToEndPerS: loaded.events / ((loaded.lastMs - relayed.firstMs) / 1000),
    cpu: cpuUse(before, after),
    cpuNames: ['relay', 'loader', ...cpuExtra(kind), 'postgres', 'broker'],
    problems: missingEvents(outbox, tables),
  };
}

/** Over HTTP the engine's work is the server's process, counted beside the loader's. */
const cpuExtra = (kind: WarehouseKind) => (kind === 'http' ? ['clickhouse'] : []);

/** The same Avro messages produced (the relay's batch size) and consumed (a group, commit per batch) by kafkajs alone. */
async function kafkaBaseline(bench: Bench): Promise<BaselineResult> {
  const { settings, config, run } = bench;
  log('\nbaseline: the same Avro messages through the broker with kafkajs alone');
  const messages = await encodedOutbox(bench.db, `${run.prefix}base.`);
  for (let round = 1; round <= CONSUME_ROUNDS; round++) run.groups.push(`${run.prefix}base-${round}`);
  const baseline = await runBaseline({
    config: kafkaConfig(settings.brokers, 'kafkajs', `${run.prefix}base.`),
    topics: topicsOf(createAvroCodec(), `${run.prefix}base.`).events,
    messages,
    batchSize: config.relay.batchSize,
    groupId: `${run.prefix}base`,
    minBatchBytes: config.loader.minBatchBytes,
    flushIntervalMs: config.loader.flushIntervalMs,
    logger: bench.logger,
    timeoutMs: DRAIN_TIMEOUT_MS,
  });
  const avgBytes = messages.reduce((n, m) => n + m.value.length, 0) / messages.length;
  log(`  produce ${fmt(baseline.producePerS)} events/s, consume ${fmt(baseline.consumePerS)} events/s, the median of ${baseline.consumeRoundsPerS.map((r) => fmt(r)).join(', ')} (${fmt(avgBytes)} bytes per message on average)`);
  log(`  CPU ms per 1,000 events: produce ${fmt(baseline.produceCpuPerThousand, 1)}, consume ${fmt(baseline.consumeCpuPerThousand, 1)} (load ${loadText()})`);
  return baseline;
}

export async function runThroughput(bench: Bench, outbox: Map<string, number>): Promise<{ baseline: BaselineResult; runs: ThroughputRun[] }> {
  const { settings, db, run: { prefix } } = bench;
  const baseline = await kafkaBaseline(bench);
  const runs: ThroughputRun[] = [];
  for (const client of settings.clients) {
    log(`\nrelay alone, ${client}`);
    const run = await relayAlone(bench, client, `${prefix}relay_${client}.`);
    runs.push(run);
    log(`  ${fmt(run.relay!.perS)} events/s (${fmt(run.relay!.relayed)} in ${fmt(run.relay!.batches)} batches), ${ratio(run.relay!.perS, baseline.producePerS)} the baseline's produce`);
    log(`  ${cpuLine(run.cpu, run.relay!.relayed, run.cpuNames)}`);
    await resetOutbox(db);
  }

  if (settings.clients.length) {
    const source = settings.clients[0]!;
    for (const kind of settings.warehouses) {
      log(`\nloader alone into ${warehouseLabel(kind)}, from the full topics of the ${source} relay`);
      const run = await loaderAlone(bench, `${prefix}relay_${source}.`, outbox, kind);
      runs.push(run);
      log(`  ${fmt(run.loader!.perS)} events/s (${fmt(run.loader!.events)} events, ${fmt(run.loader!.rows)} rows), ${ratio(run.loader!.perS, baseline.consumePerS)} the baseline's consume`);
      log(`  ${cpuLine(run.cpu, run.loader!.events, run.cpuNames)}`);
      for (const p of run.problems) log(`  MISSING ${p}`);
    }
  }

  // Every client into chDB; the server's runs with the first client only (the relay's client does not touch the warehouse).
  const pairs = settings.warehouses.flatMap((kind) => (kind === 'chdb' ? settings.clients : settings.clients.slice(0, 1)).map((client) => [client, kind] as const));
  for (const [i, [client, kind]] of pairs.entries()) {
    log(`\nrelay + loader together, ${client}, into ${warehouseLabel(kind)}`);
    const run = await together(bench, client, kind, outbox);
    runs.push(run);
    log(`  end to end ${fmt(run.endToEndPerS!)} events/s; relay ${fmt(run.relay!.perS)}, loader (following the relay) ${fmt(run.loader!.perS)} events/s`);
    log(`  ${cpuLine(run.cpu, run.loader!.events, run.cpuNames)}`);
    for (const p of run.problems) log(`  MISSING ${p}`);
    if (i < pairs.length - 1) await resetOutbox(db);
  }
  return { baseline, runs };
}
