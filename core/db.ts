import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import pg from 'pg';
import { createDataDirFromTemplate, templateForMemory } from './pglite-template.js';
import { sql, type NamedQuery } from './sql.js';

// The statement builder beside the database that runs it: Postgres code imports both from here.
export { sql, type NamedQuery };

/** The embedded Postgres (PGlite) under a directory, or in memory without one; or a Postgres server. */
export type DatabaseConfig =
  /**
   * durable: Postgres's own fsync at commit and checkpoint (EMBEDDED_FSYNC, on by default).
   * sharedBuffers: Postgres's shared_buffers (EMBEDDED_SHARED_BUFFERS; 32MB when not given).
   */
  | { kind: 'pglite'; dataDir: string | undefined; durable?: boolean; sharedBuffers?: string }
  | { kind: 'postgres'; url: string; poolSize: number };

export interface Queryable {
  many<R>(query: NamedQuery, params?: readonly unknown[]): Promise<R[]>;
  one<R>(query: NamedQuery, params?: readonly unknown[]): Promise<R | undefined>;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs fn in one transaction: committed when fn resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface Transaction extends Queryable {
  /** Multi-statement script without parameters, inside this transaction (migrations only). */
  script(text: string): Promise<void>;
  /** Runs fn inside a savepoint; a failure rolls back only what fn did and is returned, not thrown. */
  savepoint<T>(name: string, fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }>;
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string } | undefined;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

// int8 and numeric arrive as strings by default; every value we store fits a double exactly.
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const toNumber = (v: string) => Number(v);

function savepointOn(q: Queryable): Transaction['savepoint'] {
  return async (name, fn) => {
    const safe = name.replace(/[^a-z_]/g, '');
    await q.many(sql(`savepoint.${safe}`, `SAVEPOINT ${safe}`));
    try {
      const value = await fn();
      await q.many(sql(`savepoint.release.${safe}`, `RELEASE SAVEPOINT ${safe}`));
      return { ok: true as const, value };
    } catch (error) {
      await q.many(sql(`savepoint.rollback.${safe}`, `ROLLBACK TO SAVEPOINT ${safe}`));
      return { ok: false as const, error };
    }
  };
}

class PgliteDatabase implements Database {
  readonly kind = 'pglite' as const;
  constructor(private readonly pglite: PGlite) {}

  async many<R>(query: NamedQuery, params: readonly unknown[] = []): Promise<R[]> {
    const res = await this.pglite.query<R>(query.text, params as unknown[]);
    return res.rows;
  }

  async one<R>(query: NamedQuery, params: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.many<R>(query, params))[0];
  }

  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.pglite.transaction(async (ptx) => {
      const q: Queryable = {
        many: async <R>(query: NamedQuery, params: readonly unknown[] = []) =>
          (await ptx.query<R>(query.text, params as unknown[])).rows,
        one: async <R>(query: NamedQuery, params: readonly unknown[] = []) =>
          (await ptx.query<R>(query.text, params as unknown[])).rows[0],
      };
      return fn({ ...q, savepoint: savepointOn(q), script: async (text) => void (await ptx.exec(text)) });
    });
  }

  async close(): Promise<void> {
    await this.pglite.close();
  }
}

class PostgresDatabase implements Database {
  readonly kind = 'postgres' as const;
  constructor(private readonly pool: pg.Pool) {}

  private static run<R>(client: pg.Pool | pg.PoolClient, query: NamedQuery, params: readonly unknown[]) {
    // Named statements are prepared once per connection and reused.
    return client.query<R & pg.QueryResultRow>({ name: query.name, text: query.text, values: params as unknown[] });
  }

  async many<R>(query: NamedQuery, params: readonly unknown[] = []): Promise<R[]> {
    return (await PostgresDatabase.run<R>(this.pool, query, params)).rows;
  }

  async one<R>(query: NamedQuery, params: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.many<R>(query, params))[0];
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const q: Queryable = {
      many: async <R>(query: NamedQuery, params: readonly unknown[] = []) =>
        (await PostgresDatabase.run<R>(client, query, params)).rows,
      one: async <R>(query: NamedQuery, params: readonly unknown[] = []) =>
        (await PostgresDatabase.run<R>(client, query, params)).rows[0],
    };
    try {
      await client.query('BEGIN');
      const result = await fn({ ...q, savepoint: savepointOn(q), script: async (text) => void (await client.query(text)) });
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
        client.release();
      } catch (rollbackError) {
        // A connection that cannot roll back is broken: destroy it rather than return it to the pool.
        client.release(rollbackError as Error);
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

export interface DatabaseOptions {
  /** An idle pooled connection failed (server restart); the pool replaces it. */
  onConnectionError?: (error: Error) => void;
  /** PGlite: where the fresh-cluster template is kept (core/pglite-template.ts). */
  pgliteTemplateFile?: string;
}

/**
 * PGlite keeps Postgres's 128 MB of shared buffers inside its WebAssembly heap, and initdb and the
 * first start touch all of them: 32 MB cuts the embedded start's resident memory by about 130 MiB
 * (a fresh in-memory database, as the tests open, by about 630 MiB). A single process with the OS's
 * page cache behind it does not need the larger cache (docs/performance.md, "Embedded start").
 */
const DEFAULT_SHARED_BUFFERS = '32MB';
export const pgliteStartParams = (sharedBuffers = DEFAULT_SHARED_BUFFERS) => [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`];

interface NodeStream {
  nfd: number;
}

/**
 * PGlite's Node file system with a working fsync. PGlite starts Postgres with `-F` (fsync off),
 * and its Emscripten file system has no fsync either, so a commit reaches the page cache only:
 * it survives a crash of the process but not of the machine. Here Postgres's fsync calls reach
 * the disk (fdatasync is a no-op in Emscripten, hence wal_sync_method=fsync): the WAL at every
 * commit, the data files at checkpoints, as a Postgres server does.
 */
type PostgresMod = Parameters<NodeFS['init']>[1];

class DurableNodeFS extends NodeFS {
  override async init(pg: PGlite, opts: Partial<PostgresMod>) {
    const result = await super.init(pg, opts);
    const preRun = result.emscriptenOpts.preRun ?? [];
    result.emscriptenOpts.preRun = [
      ...preRun,
      (mod: PostgresMod) => {
        const nodefs = (mod as unknown as { NODEFS: { stream_ops: Record<string, unknown> } }).NODEFS;
        nodefs.stream_ops.fsync = (stream: NodeStream) => {
          fsyncSync(stream.nfd);
          return 0;
        };
      },
    ];
    return result;
  }
}

const durable = (params: string[]) => [...params.filter((p) => p !== '-F'), '-c', 'wal_sync_method=fsync'];

/**
 * A fresh data directory is unpacked beside its final place, synced (unpacking does not sync), then
 * renamed into place: a crash part-way leaves no half-made cluster for the next start to resume.
 */
async function createDataDir(dataDir: string, params: string[], templateFile?: string): Promise<void> {
  // What a start that crashed part-way left (one process opens a data directory at a time).
  const parent = dirname(dataDir);
  const partialPrefix = `${basename(dataDir)}.partial-`;
  if (existsSync(parent)) {
    for (const name of readdirSync(parent)) if (name.startsWith(partialPrefix)) rmSync(join(parent, name), { recursive: true, force: true });
  }
  const partial = join(parent, `${partialPrefix}${process.pid}`);
  await createDataDirFromTemplate(partial, params, templateFile);
  syncTree(partial);
  renameSync(partial, dataDir);
  syncPath(parent);
}

function syncTree(path: string): void {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) syncTree(child);
    else if (entry.isFile()) syncPath(child);
  }
  syncPath(path);
}

function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export async function openDatabase(config: DatabaseConfig, options: DatabaseOptions = {}): Promise<Database> {
  if (config.kind === 'pglite') {
    const params = pgliteStartParams(config.sharedBuffers);
    const pgliteOptions: PGliteOptions = { parsers: { [INT8_OID]: toNumber, [NUMERIC_OID]: toNumber }, startParams: params };
    if (config.dataDir === undefined) {
      const loadDataDir = await templateForMemory(params, options.pgliteTemplateFile);
      return new PgliteDatabase(await PGlite.create({ ...pgliteOptions, loadDataDir }));
    }
    if (!existsSync(join(config.dataDir, 'PG_VERSION'))) await createDataDir(config.dataDir, params, options.pgliteTemplateFile);
    // Durable unless EMBEDDED_FSYNC=off chose speed over surviving a power loss.
    if (config.durable === false) return new PgliteDatabase(await PGlite.create(config.dataDir, pgliteOptions));
    const pglite = await PGlite.create({ ...pgliteOptions, fs: new DurableNodeFS(config.dataDir), startParams: durable(params) });
    return new PgliteDatabase(pglite);
  }
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID || oid === NUMERIC_OID ? toNumber : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({ connectionString: config.url, max: config.poolSize, types });
  // An idle client that errors must not crash the process: report it and let the pool replace it.
  pool.on('error', options.onConnectionError ?? (() => {}));
  return new PostgresDatabase(pool);
}
