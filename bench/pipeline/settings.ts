/** The pipeline benchmark's knobs (see bench/pipeline.ts) and the service settings its children run with. */
import { loadConfig, type Config, type KafkaConfig } from '../../core/config.js';
import { DEFAULT_ADMIN_URL, intSetting } from '../setup.js';
import { WAREHOUSE_KINDS, type WarehouseKind } from './warehouses.js';

export type Client = KafkaConfig['client'];
const CLIENTS = ['kafkajs', 'platformatic'] as const;
const PHASES = ['throughput', 'breakdown', 'freshness'] as const;

function listSetting<T extends string>(name: string, fallback: T[], allowed: readonly T[]): T[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) if (!allowed.includes(item as T)) throw new Error(`${name}: ${item} is not one of ${allowed.join(', ')}`);
  return items as T[];
}

export interface PipelineSettings {
  adminUrl: string;
  brokers: string[];
  events: number;
  rate: number;
  seconds: number;
  clients: Client[];
  phases: (typeof PHASES)[number][];
  /** chDB, and the ClickHouse server over HTTP: the loader's runs are made on each. */
  warehouses: WarehouseKind[];
  cpuProfDir: string | undefined;
}

export function readSettings(): PipelineSettings {
  return {
    adminUrl: process.env.DATABASE_URL || DEFAULT_ADMIN_URL,
    brokers: (process.env.KAFKA_BROKERS || '127.0.0.1:9092').split(',').map((b) => b.trim()).filter(Boolean),
    events: intSetting('BENCH_EVENTS', 200_000, 1_000, 5_000_000),
    rate: intSetting('BENCH_RATE', 1_000, 1, 20_000),
    seconds: intSetting('BENCH_SECONDS', 20, 1, 600),
    clients: listSetting<Client>('BENCH_CLIENTS', [...CLIENTS], CLIENTS),
    phases: listSetting('BENCH_PHASES', [...PHASES], PHASES),
    warehouses: listSetting<WarehouseKind>('BENCH_WAREHOUSES', [...WAREHOUSE_KINDS], WAREHOUSE_KINDS),
    cpuProfDir: process.env.BENCH_CPU_PROF || undefined,
  };
}

/** The service's knobs, passed to the children only when set here. */
const PASSED_THROUGH = ['RELAY_BATCH_SIZE', 'RELAY_POLL_MS', 'LOADER_FLUSH_MS', 'LOADER_MIN_BATCH_BYTES'] as const;

export const passedThrough = () => Object.fromEntries(PASSED_THROUGH.filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));

/** What the children will run with: the service's own config parser reads the same variables. */
export const childConfig = (): Config => loadConfig(passedThrough(), { service: 'ingest' });
