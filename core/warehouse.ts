import { mkdir } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { sql, type NamedQuery } from './sql.js';

/** The embedded chDB engine (data under a directory) or a ClickHouse server over HTTP. */
export type WarehouseConfig =
  | { kind: 'chdb'; path: string }
  /** url may carry credentials and the database: http://user:password@host:8123/db */
  | { kind: 'http'; url: string };

export type QueryParams = Record<string, unknown>;

export interface InsertOptions {
  /**
   * insert_deduplication_token: a block whose token the table has seen within its
   * non_replicated_deduplication_window is dropped. Required: the same rows from the same source
   * range must carry the same token, so a redelivered batch writes nothing.
   */
  dedupToken: string;
}

export interface Warehouse {
  readonly kind: WarehouseConfig['kind'];
  /**
   * Inserts rows (the columns are the first row's keys), or rows a TabSeparatedWriter already
   * encoded; resolves once the warehouse acknowledged the insert.
   */
  insert(table: string, rows: readonly Record<string, unknown>[] | EncodedRows, options: InsertOptions): Promise<void>;
  /** A SELECT with `{name:Type}` placeholders bound server-side; 64-bit integers arrive as numbers. */
  query<R>(query: NamedQuery, params?: QueryParams): Promise<R[]>;
  /** A statement without a result (DDL); one statement per call. */
  command(query: NamedQuery, params?: QueryParams): Promise<void>;
  /**
   * A session in which ClickHouse itself runs every statement read-only and within the limits:
   * for the analysts' tools (analytics/); absent on wrappers in tests.
   */
  readOnly?(limits: ReadOnlyLimits): Promise<ReadOnlySession>;
  close(): Promise<void>;
}

export interface ReadOnlyLimits {
  maxExecutionSeconds: number;
  maxMemoryBytes: number;
}

/**
 * Statements run with the engine's `readonly = 1` (writes, DDL, temporary tables and setting
 * changes refused by ClickHouse) and `max_execution_time` / `max_memory_usage`, given outside the
 * statement's text, where no statement can lift them: in chDB as the state of a connection of its
 * own, over HTTP as settings of every request.
 */
export interface ReadOnlySession {
  /**
   * One statement (`{name:Type}` placeholders bound by ClickHouse); the answer's bytes in `format`,
   * ClickHouse's default_format, so the text needs no FORMAT clause.
   */
  bytes(query: NamedQuery, params: QueryParams, format: string): Promise<Buffer>;
  close(): Promise<void>;
}

/** The part of chdb/connection's `.chdb` extension the warehouse uses. */
interface RawInserter {
  rawInsert(params: { table: string; values: Buffer; format: 'TSV'; columns: readonly string[]; settings: Record<string, string | number | boolean> }): Promise<unknown>;
}

/**
 * Rows as TabSeparated text: what the engine parses with the least work (no quotes, no object
 * keys), and cheap to write. Strings escape backslash, tab, newline and carriage return; `\N` is
 * NULL; booleans are `true`/`false`. Any other value (an object, an array) is refused.
 */
export function tabSeparated(rows: readonly Record<string, unknown>[], columns: readonly string[]): Buffer {
  // One string per row, joined once: V8 builds joins flat, where += builds ropes to flatten later.
  const lines = new Array<string>(rows.length + 1);
  const cells = new Array<string>(columns.length);
  for (let r = 0; r < rows.length; r += 1) lines[r] = tabSeparatedLine(rows[r]!, columns, cells);
  lines[rows.length] = '';
  return Buffer.from(lines.join('\n'), 'utf8');
}

function tabSeparatedLine(row: Record<string, unknown>, columns: readonly string[], cells: string[]): string {
  for (let i = 0; i < columns.length; i += 1) cells[i] = cell(columns[i]!, row[columns[i]!]);
  return cells.join('\t');
}

/** Rows a TabSeparatedWriter encoded: the column list, the bytes and how many rows they hold. */
export interface EncodedRows {
  readonly columns: readonly string[];
  readonly body: Buffer;
  readonly count: number;
}

/** Lines kept as strings before they become bytes: enough for one join to be cheap, few enough to stay young. */
const LINES_PER_CHUNK = 1024;

/**
 * One table's rows encoded as they come (the columns are the first row's keys), the same bytes
 * tabSeparated gives for the whole list. Only speed: a row is garbage as soon as it is written,
 * and what a load keeps until its insert is bytes outside the JavaScript heap, where a list of
 * row objects kept until the end cost the loader about as much garbage collection as encoding
 * (docs/performance.md, "Loader (issue 14)"). The bytes grow in one buffer, handed over as is.
 */
export class TabSeparatedWriter {
  private columns: readonly string[] | undefined;
  private readonly cells: string[] = [];
  private lines: string[] = [];
  private bytes = Buffer.allocUnsafe(0);
  private length = 0;
  private rows = 0;

  get count(): number {
    return this.rows;
  }

  /** The row's line, without adding it; throws (naming the column) on a value the warehouse cannot store. */
  encode(row: Record<string, unknown>): string {
    this.columns ??= Object.keys(row);
    return tabSeparatedLine(row, this.columns, this.cells);
  }

  /** Adds a line encode() gave. */
  add(line: string): void {
    this.lines.push(line);
    this.rows += 1;
    if (this.lines.length >= LINES_PER_CHUNK) this.flush();
  }

  private flush(): void {
    if (this.lines.length === 0) return;
    this.lines.push('');
    const text = this.lines.join('\n');
    this.lines = [];
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.bytes.length - this.length < text.length * 3) {
      const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.bytes.length, this.length + text.length * 3, 64 * 1024));
      this.bytes.copy(grown, 0, 0, this.length);
      this.bytes = grown;
    }
    this.length += this.bytes.write(text, this.length, 'utf8');
  }

  /** What was added, for Warehouse.insert. */
  finish(): EncodedRows {
    this.flush();
    return { columns: this.columns ?? [], body: this.bytes.subarray(0, this.length), count: this.rows };
  }
}

function cell(column: string, v: unknown): string {
  if (typeof v === 'string') return SPECIAL.test(v) ? v.replace(SPECIALS, escapeOne) : v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`${column}: ${v} is not a number the warehouse stores`);
    return String(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v === null || v === undefined) return '\\N';
  throw new Error(`${column}: cannot send ${typeof v} values to the warehouse`);
}

const isEncoded = (rows: readonly Record<string, unknown>[] | EncodedRows): rows is EncodedRows => !Array.isArray(rows);

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const escapeOne = (c: string) => ESCAPES[c]!;

type ClientConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>;

const TABLE_NAME = /^[a-z_][a-z0-9_]*$/;

// Every value we store fits a double; numbers keep the call sites free of string parsing.
const READ_SETTINGS: ClickHouseSettings = { output_format_json_quote_64bit_integers: 0 };

const readOnlyQuery = sql('warehouse.readonly', `SELECT getSetting('readonly') AS readonly`);

/** A limit ClickHouse reads as a whole number, where 0 would mean none: at least 1. */
const limit = (value: number) => Math.max(1, Math.floor(value));

async function readOnlyLevel(client: ClickHouseClient, settings: ClickHouseSettings): Promise<number> {
  // No setting of its own (READ_SETTINGS): a read-only session refuses to change any.
  const result = await client.query({ query: readOnlyQuery.text, format: 'JSONEachRow', clickhouse_settings: settings });
  const [row] = await result.json<{ readonly: number | string }>();
  return Number(row?.readonly ?? 0);
}

function readOnlySession(client: ClickHouseClient, settings: ClickHouseSettings, close: () => Promise<void>): ReadOnlySession {
  return {
    async bytes(query, params, format) {
      const result = await client.exec({
        query: query.text,
        query_params: params,
        // Not a setting but the format of the answer: chDB's format option, ClickHouse HTTP's default_format parameter.
        clickhouse_settings: { ...settings, default_format: format as ClickHouseSettings['default_format'] },
      });
      const chunks: Buffer[] = [];
      for await (const chunk of result.stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
      return Buffer.concat(chunks);
    },
    close,
  };
}

class ClickHouseWarehouse implements Warehouse {
  /** chDB runs one statement at a time per session, and settings are session state there: calls are serialized. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    readonly kind: WarehouseConfig['kind'],
    private readonly client: ClickHouseClient,
    /** chDB's own insert: a Buffer handed to the engine without a copy into the statement's text. */
    private readonly raw?: RawInserter,
    /** chDB: another connection to the same data directory, with session settings of its own. */
    private readonly connect?: () => ClickHouseClient,
  ) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.kind !== 'chdb') return fn();
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  insert(table: string, rows: readonly Record<string, unknown>[] | EncodedRows, options: InsertOptions): Promise<void> {
    if (!TABLE_NAME.test(table)) return Promise.reject(new Error(`Invalid table name ${JSON.stringify(table)}`));
    if (!options.dedupToken) return Promise.reject(new Error(`An insert into ${table} needs a deduplication token`));
    let columns: readonly string[];
    let body: Buffer;
    if (isEncoded(rows)) {
      if (rows.count === 0) return Promise.resolve();
      ({ columns, body } = rows);
    } else {
      if (rows.length === 0) return Promise.resolve();
      // Rows may list their keys in any order: the column list names them.
      columns = Object.keys(rows[0]!);
      try {
        body = tabSeparated(rows, columns);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const settings = {
      insert_deduplicate: 1,
      insert_deduplication_token: options.dedupToken,
      // Timestamps are sent as 'YYYY-MM-DD hh:mm:ss.ffffff' (UTC); anything else is an error, not a guess.
      date_time_input_format: 'basic',
      input_format_skip_unknown_fields: 0,
    } satisfies ClickHouseSettings;
    return this.serial(async () => {
      if (this.raw) {
        // The bytes go to the engine as they are, the settings in the statement (not the session).
        await this.raw.rawInsert({ table, values: body, format: 'TSV', columns, settings });
        return;
      }
      await this.client.insert({ table, values: Readable.from([body], { objectMode: false }), columns: columns as [string, ...string[]], format: 'TabSeparated', clickhouse_settings: settings });
    });
  }

  query<R>(query: NamedQuery, params: QueryParams = {}): Promise<R[]> {
    return this.serial(async () => {
      const result = await this.client.query({
        query: query.text,
        query_params: params,
        format: 'JSONEachRow',
        clickhouse_settings: READ_SETTINGS,
      });
      return result.json<R>();
    });
  }

  command(query: NamedQuery, params: QueryParams = {}): Promise<void> {
    return this.serial(async () => {
      await this.client.command({ query: query.text, query_params: params });
    });
  }

  async readOnly(limits: ReadOnlyLimits): Promise<ReadOnlySession> {
    const limitSettings = { max_execution_time: limit(limits.maxExecutionSeconds), max_memory_usage: String(limit(limits.maxMemoryBytes)) };
    if (this.connect) {
      // chDB's settings of a request are SETs on its session: a connection of its own gets the
      // limits, then readonly = 1 last (from then on the engine refuses any change of a setting),
      // and the loader's connection stays writable. It runs beside that one, not after it.
      const client = this.connect();
      try {
        await client.command({ query: readOnlyQuery.text, clickhouse_settings: { ...limitSettings, readonly: '1' } });
        if ((await readOnlyLevel(client, {})) !== 1) throw new Error('chDB did not make the analysts\' connection read-only');
      } catch (error) {
        await client.close();
        throw error;
      }
      return readOnlySession(client, {}, () => client.close());
    }
    // Over HTTP the settings go with every request. A user whose profile is read-only already (the
    // analyst user) keeps its own level: ClickHouse refuses a change of readonly there.
    const settings: ClickHouseSettings = (await readOnlyLevel(this.client, {})) > 0 ? limitSettings : { ...limitSettings, readonly: '1' };
    if ((await readOnlyLevel(this.client, settings)) < 1) throw new Error('ClickHouse did not run the analysts\' requests read-only');
    return readOnlySession(this.client, settings, async () => {});
  }

  close(): Promise<void> {
    return this.serial(() => this.client.close());
  }
}

/**
 * Opens the warehouse. Embedded: chDB in this process through @clickhouse/client's connection
 * hook (`chdb/connection`), data persisted under config.path; chDB binds one data directory per
 * process, so open it once and share it. Distributed: a ClickHouse server at config.url.
 */
export async function openWarehouse(config: WarehouseConfig): Promise<Warehouse> {
  if (config.kind === 'chdb') {
    await mkdir(config.path, { recursive: true });
    // Loaded only in the embedded mode: the native engine is large and the HTTP mode never needs it.
    const { createChdbConnection } = await import('chdb/connection');
    // chdb types its Connection with @clickhouse/client-common while @clickhouse/client 1.23 bundles
    // its own copy of those types: the same interface at run time, two declarations for tsc.
    const connect = () => createClient({ connection: createChdbConnection({ path: config.path }) as unknown as ClientConnection });
    const connection = createChdbConnection({ path: config.path }) as unknown as ClientConnection;
    const client = createClient({ connection });
    return new ClickHouseWarehouse('chdb', client, (connection as unknown as { chdb: RawInserter }).chdb, connect);
  }
  // The client's own console logger off: every error reaches the caller, which logs it with the
  // service's (redacting) logger or shows it to the analyst; the client would print each refused
  // analyst query, and an insert's parse error with the rows' text, unredacted.
  const client = createClient({ url: config.url, request_timeout: 60_000, log: { level: ClickHouseLogLevel.OFF } });
  return new ClickHouseWarehouse('http', client);
}
