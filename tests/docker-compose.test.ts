/**
 * docker-compose.yml cannot drift (issue 29, point 5): no Docker engine runs here, so the file is
 * parsed (the yaml package, merge keys on, Compose's ${VAR} interpolation) and every service that
 * runs the service's code is checked: its environment against the config schema (core/config.ts's
 * loadConfig, and no variable the service does not read), the settings `npm run start:distributed`
 * gives the same role (scripts/distributed/environment.ts), the replicas of the distributed
 * topology, Node 24, and the ClickHouse service's analyst user files.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../core/config.js';
import { requireSecretsKey } from '../core/secret-box.js';
import { INGEST_PROCESSES, INGEST_VARIABLES, LOADER_PROCESSES, SHARED_VARIABLES } from '../scripts/distributed/environment.js';

const ROOT = join(import.meta.dirname, '..');
const TEXT = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string | number | boolean | null>;
  deploy?: { replicas?: number };
  ports?: string[];
  volumes?: string[];
  restart?: string;
}

/** Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, $$ for a dollar. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (whole === '$$') return '$';
    const value = env[name!];
    const empty = value === undefined || (op?.startsWith(':') && value === '');
    if (op?.endsWith('-')) return empty ? arg! : value!;
    if (op?.endsWith('?') && empty) throw new Error(`${name}: ${arg}`);
    return value ?? '';
  });
}

function compose(env: Record<string, string>): { services: Record<string, Service> } {
  return parse(interpolate(TEXT, env), { merge: true }) as { services: Record<string, Service> };
}

const ENV = { SECRETS_KEY: randomBytes(32).toString('base64') };
const { services } = compose(ENV);
/** The services that run main.ts, by role. */
const roles = Object.entries(services).flatMap(([name, service]) => {
  const at = service.command?.indexOf('main.ts') ?? -1;
  return at >= 0 ? [{ name, service, role: service.command![at + 1]! }] : [];
});
const envOf = (service: Service) => Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]));

describe('docker-compose.yml', () => {
  it('runs the distributed topology: two ingest replicas, one relay, two loaders, the outgoing webhooks, on Node 24', () => {
    expect(roles.map((r) => r.role).sort()).toEqual(['ingest', 'loader', 'relay', 'webhooks']);
    const replicas = (role: string) => roles.find((r) => r.role === role)!.service.deploy?.replicas ?? 1;
    expect(replicas('ingest')).toBe(INGEST_PROCESSES);
    expect(replicas('loader')).toBe(LOADER_PROCESSES);
    expect(replicas('relay')).toBe(1);
    // Each ingest replica on a host port of its own, as start:distributed uses PORT and PORT+1.
    expect(roles.find((r) => r.role === 'ingest')!.service.ports).toEqual(['3000-3001:3000']);
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    for (const { name, service } of roles) {
      expect(service.image, name).toBe(`node:${/\d+/.exec(engines)![0]}`);
      expect(service.restart, name).toBe('on-failure');
    }
  });

  it.each(roles.map((r) => [r.name, r] as const))('%s: its environment is a valid configuration of its role', (_name, { service, role }) => {
    const env = envOf(service);
    // Only variables the service reads: a misspelt one would be ignored without a word.
    expect(Object.keys(env).filter((k) => !CONFIG_VARIABLES.includes(k))).toEqual([]);
    const config = loadConfig(env, { service: role });
    expect(() => requireSecretsKey(config)).not.toThrow();
    expect([...config.roles]).toEqual([role]);
    expect(config.secrets.key).toEqual(Buffer.from(ENV.SECRETS_KEY, 'base64'));
    expect(config.database).toMatchObject({ kind: 'postgres' });
    expect(config.kafka?.brokers).toEqual(['kafka:9092']);
    expect(config.warehouse).toMatchObject({ kind: 'http' });
    expect(config.rateLimit).toMatchObject({ kind: 'redis' });
    expect(config.http.host).toBe('0.0.0.0');
    // The stores named are the file's own services.
    for (const url of [env.DATABASE_URL!, env.REDIS_URL!, env.CLICKHOUSE_URL!, `tcp://${env.KAFKA_BROKERS!}`]) {
      expect(Object.keys(services), url).toContain(new URL(url).hostname);
    }
  });

  it.each(roles.map((r) => [r.name, r] as const))('%s: the settings npm run start:distributed gives the same role', (_name, { service, role }) => {
    const keys = Object.keys(envOf(service));
    expect(keys).toEqual(expect.arrayContaining([...SHARED_VARIABLES]));
    if (role === 'ingest') expect(keys).toEqual(expect.arrayContaining([...INGEST_VARIABLES]));
  });

  it('refuses to start without SECRETS_KEY, as distributed ingest does', () => {
    expect(() => compose({})).toThrow(/SECRETS_KEY: set SECRETS_KEY in \.env/);
  });

  it('gives ClickHouse the analyst user and its constraints from deploy/clickhouse/, with a password', () => {
    const clickhouse = services.clickhouse!;
    const mounts = (clickhouse.volumes ?? []).map((v) => v.split(':'));
    const files = mounts.map(([from]) => from!.replace(/^\.\//, ''));
    expect(files).toEqual(expect.arrayContaining(['deploy/clickhouse/users.d/analyst.xml', 'deploy/clickhouse/config.d/analyst-constraints.xml']));
    for (const file of files) expect(existsSync(join(ROOT, file)), file).toBe(true);
    for (const [, to, mode] of mounts) {
      expect(to).toMatch(/^\/etc\/clickhouse-server\/(users|config)\.d\//);
      expect(mode).toBe('ro');
    }
    expect(envOf(clickhouse).CLICKHOUSE_ANALYST_PASSWORD).toBe('analyst');
    expect(readFileSync(join(ROOT, 'deploy/clickhouse/users.d/analyst.xml'), 'utf8')).toContain('from_env="CLICKHOUSE_ANALYST_PASSWORD"');
  });
});
