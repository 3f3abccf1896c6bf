/**
 * Issue 27, point 1: an analyst's SQL cannot write, read files or reach URLs, whatever the text.
 * Crafted texts (heredocs, comments, quotes, SETTINGS, FORMAT, multi-statement, DDL and writes,
 * table functions and file(), EXPLAIN-step tricks) go through the analysts' path of each target:
 * chDB in this process (`npm run sql` on a stopped service), the SQL endpoint a running service
 * serves (queries/analytics/endpoint.ts), and a ClickHouse HTTP interface (the distributed mode,
 * CLICKHOUSE_TEST_URL from scripts/clickhouse-server.sh) as the default user and as the analyst
 * user of deploy/clickhouse/users.d/analyst.xml. After each: refused, no database, table or row
 * changed, no file written where the texts aim (their names carry a marker: searched in the
 * warehouse's data and user_files directories, the target directory and the working directory),
 * the canary file's content in no answer, and no request reached the local HTTP and TCP sinks.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../core/config.js';
import { sql } from '../../../core/db.js';
import { createLogger } from '../../../core/log.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { serveSqlEndpoint, type SqlEndpoint } from '../../../queries/analytics/endpoint.js';
import { QueryRefused, type RefusalReason } from '../../../queries/analytics/guard.js';
import { QueryFailed, runAnalyticsQuery, warehouseAccess } from '../../../queries/analytics/run.js';
import { openSqlSession, runningService, type SqlSession } from '../../../queries/analytics/target.js';
import { analystUrl, clickhouseTestUrl } from '../../support/clickhouse-server.js';

const LIMITS = { maxExecutionSeconds: 20, maxMemoryBytes: 1_000_000_000 };
/** In the name of every table, database and file a text tries to create. */
const MARK = `guard${randomBytes(4).toString('hex')}`;
const SECRET = `CANARY-${randomBytes(12).toString('hex')}`;
const CLICKHOUSE_URL = clickhouseTestUrl();

/** [name, text, what the refusal must be: a guard reason, or `failed` (the engine's syntax error)]. */
type Expected = RefusalReason | 'failed';
const CRAFTED: [string, string, Expected][] = [
  // Heredocs: ClickHouse strings the old lexer did not know, hiding `;`, `--` and `)`.
  ['a heredoc hiding a CREATE ... AS SELECT FROM url()', `SELECT $$ ; $$ AS a; CREATE TABLE __MARK___t1 ENGINE = Memory AS SELECT * FROM url('__URL__/ctas', 'CSV', 'a String')`, 'multiple_statements'],
  ['a heredoc hiding INSERT INTO FUNCTION file() SELECT FROM file()', `SELECT $$ -- $$ AS a; INSERT INTO FUNCTION file('__OUT__/__MARK__-1.csv', 'CSV', 'a String') SELECT * FROM file('__CANARY__', 'LineAsString')`, 'multiple_statements'],
  // Aimed at the old EXPLAIN step, which spliced the text into `SELECT explain FROM (EXPLAIN AST <text>)`.
  ['a heredoc closing the EXPLAIN wrapper, then CREATE ... AS SELECT FROM url()', `SELECT $$ -- $$ AS a FROM numbers(1)); CREATE TABLE __MARK___t7 ENGINE = Memory AS SELECT * FROM url('__URL__/ctas3', 'CSV', 'a String'); SELECT (1`, 'failed'],
  ['a heredoc closing the EXPLAIN wrapper, then INSERT INTO FUNCTION file()', `SELECT $$ -- $$); INSERT INTO FUNCTION file('__OUT__/__MARK__-8.csv', 'CSV', 'a String') SELECT * FROM file('__CANARY__', 'LineAsString'); SELECT ($$ -- $$`, 'failed'],
  ['a tagged heredoc hiding a quote and a statement', `SELECT $tag$ ' -- $tag$ AS a; CREATE TABLE __MARK___t2 (a String) ENGINE = Memory`, 'multiple_statements'],
  ['a heredoc hiding a block comment opener', `SELECT $$ /* $$ AS a; DROP TABLE click_recorded -- */`, 'multiple_statements'],
  ['a heredoc hiding the EXPLAIN wrapper\'s parenthesis', `SELECT $$ -- $$ AS a FROM numbers(1)) UNION ALL (SELECT * FROM file('__CANARY__', 'LineAsString')`, 'failed'],
  ['a heredoc hiding INTO OUTFILE from the lexer', `SELECT $$ -- $$ AS a INTO OUTFILE '__OUT__/__MARK__-2.txt'`, 'into_outfile'],
  // Comments.
  ['a statement after a -- comment', `SELECT 1 -- ;\n; INSERT INTO click_recorded (click_id) VALUES ('x')`, 'multiple_statements'],
  ['a statement after a # comment', `SELECT 1 # ;\n; DROP TABLE click_recorded`, 'multiple_statements'],
  ['a statement after nested block comments', `SELECT 1 /* a /* b */ ; */ ; SYSTEM STOP MERGES`, 'multiple_statements'],
  ['a statement after a comment and a ;', `SELECT 1 /* ; */ -- x\n; TRUNCATE TABLE click_recorded`, 'multiple_statements'],
  // Quotes and escapes.
  ['a statement after doubled and escaped quotes', `SELECT 'it''s;' AS a, 'x\\';' AS b; CREATE TABLE __MARK___t3 (a Int8) ENGINE = Memory`, 'multiple_statements'],
  ['a statement after a backslash at a string\'s end', `SELECT 'x\\\\'; CREATE TABLE __MARK___t4 (a Int8) ENGINE = Memory -- '`, 'multiple_statements'],
  ['a statement after backquoted and double-quoted names', 'SELECT 1 AS `a;b`, 2 AS "c;d"; DROP TABLE click_recorded', 'multiple_statements'],
  // Multi-statement.
  ['two SELECTs', `SELECT 1; SELECT 2`, 'multiple_statements'],
  ['a ; inside a string, then a DROP', `SELECT ';' AS a; DROP TABLE click_recorded`, 'multiple_statements'],
  // SETTINGS, anywhere (a subquery's SETTINGS escape readonly = 1 in ClickHouse 26.7).
  ['SETTINGS readonly = 0', `SELECT count() FROM analytics.clicks SETTINGS readonly = 0`, 'settings_clause'],
  ['SETTINGS readonly = 0 in a subquery reading file()', `SELECT * FROM (SELECT * FROM file('__CANARY__', 'LineAsString') SETTINGS readonly = 0)`, 'settings_clause'],
  ['SETTINGS readonly = 0 in a subquery', `SELECT * FROM (SELECT getSetting('readonly') AS r SETTINGS readonly = 0)`, 'settings_clause'],
  ['SETTINGS max_execution_time in a subquery', `SELECT * FROM (SELECT count() FROM analytics.clicks SETTINGS max_execution_time = 100000)`, 'settings_clause'],
  ['SETTINGS in a WITH clause', `WITH x AS (SELECT 1 AS a SETTINGS max_memory_usage = 0) SELECT * FROM x`, 'settings_clause'],
  ['SETTINGS in a scalar subquery', `SELECT (SELECT getSetting('readonly') SETTINGS readonly = 0) AS r`, 'settings_clause'],
  ['SETTINGS in an IN subquery', `SELECT 1 WHERE 1 IN (SELECT 1 SETTINGS readonly = 0)`, 'settings_clause'],
  ['SETTINGS in a UNION member', `SELECT 1 UNION ALL SELECT * FROM file('__CANARY__', 'LineAsString') SETTINGS readonly = 0`, 'settings_clause'],
  // FORMAT and INTO OUTFILE.
  ['a FORMAT clause', `SELECT 1 FORMAT CSV`, 'format_clause'],
  ['FORMAT Native after a comment', `SELECT 1 -- x\nFORMAT Native`, 'format_clause'],
  ['FORMAT in a subquery', `SELECT * FROM (SELECT 1 FORMAT CSV)`, 'failed'],
  ['the format() table function', `SELECT * FROM format(CSV, 'a String', 'x')`, 'external_access'],
  ['INTO OUTFILE', `SELECT 1 INTO OUTFILE '__OUT__/__MARK__-3.txt'`, 'into_outfile'],
  ['INTO OUTFILE ... APPEND with FORMAT', `SELECT 1 INTO OUTFILE '__OUT__/__MARK__-4.txt' APPEND FORMAT CSV`, 'into_outfile'],
  ['INTO OUTFILE to a relative path', `SELECT 1 INTO OUTFILE '__MARK__-5.txt'`, 'into_outfile'],
  // Writes, DDL and other statements.
  ['INSERT', `INSERT INTO click_recorded (event_id, program_id, click_id) VALUES (generateUUIDv4(), 1, 'x')`, 'not_a_select'],
  ['INSERT INTO FUNCTION file()', `INSERT INTO FUNCTION file('__OUT__/__MARK__-6.csv', 'CSV', 'a String') SELECT * FROM file('__CANARY__', 'LineAsString')`, 'not_a_select'],
  ['CREATE TABLE ... AS SELECT FROM url()', `CREATE TABLE __MARK___t5 ENGINE = Memory AS SELECT * FROM url('__URL__/ctas2', 'CSV', 'a String')`, 'not_a_select'],
  ['CREATE DATABASE', `CREATE DATABASE __MARK___db`, 'not_a_select'],
  ['ALTER', `ALTER TABLE click_recorded DELETE WHERE 1`, 'not_a_select'],
  ['DROP', `DROP TABLE click_recorded`, 'not_a_select'],
  ['ATTACH', `ATTACH TABLE __MARK___t6 (a Int8) ENGINE = Memory`, 'not_a_select'],
  ['SYSTEM', `SYSTEM STOP MERGES`, 'not_a_select'],
  ['KILL (runs under readonly = 1)', `KILL QUERY WHERE 1`, 'not_a_select'],
  ['SET', `SET readonly = 0`, 'not_a_select'],
  ['USE', `USE system`, 'not_a_select'],
  ['DESCRIBE url() (reaches the URL under readonly = 1)', `DESCRIBE url('__URL__/describe', 'CSV')`, 'not_a_select'],
  ['EXPLAIN PLAN of a url() read', `EXPLAIN PLAN SELECT * FROM url('__URL__/explain', 'CSV', 'a String')`, 'not_a_select'],
  ['EXPLAIN AST (a statement of its own)', `EXPLAIN AST SELECT 1`, 'not_a_select'],
  // Files, URLs, other servers.
  ['file()', `SELECT * FROM file('__CANARY__', 'LineAsString')`, 'external_access'],
  ['file() in a subquery', `SELECT count() FROM (SELECT * FROM file('__CANARY__', 'LineAsString'))`, 'external_access'],
  ['the file() function (not stopped by readonly)', `SELECT file('__CANARY__') AS f`, 'external_access'],
  ['the file() function in a WITH clause', `WITH (SELECT file('__CANARY__')) AS s SELECT s`, 'external_access'],
  ['a backquoted `file`()', 'SELECT * FROM `file`(\'__CANARY__\', \'LineAsString\')', 'external_access'],
  ['file() inside view()', `SELECT * FROM view(SELECT * FROM file('__CANARY__', 'LineAsString'))`, 'external_access'],
  ['url() to the local HTTP sink', `SELECT * FROM url('__URL__/u', 'CSV', 'a String')`, 'external_access'],
  ['s3()', `SELECT * FROM s3('__URL__/bucket/x.csv', 'CSV', 'a String')`, 'external_access'],
  ['remote()', `SELECT * FROM remote('127.0.0.1:__TCP__', system.one)`, 'external_access'],
  ['postgresql()', `SELECT * FROM postgresql('127.0.0.1:__TCP__', 'db', 't', 'u', 'p')`, 'external_access'],
  ['mysql()', `SELECT * FROM mysql('127.0.0.1:__TCP__', 'db', 't', 'u', 'p')`, 'external_access'],
  ['executable()', `SELECT * FROM executable('cat __CANARY__', 'LineAsString', 'a String')`, 'external_access'],
  ['sqlite() (creates its file before readonly refuses)', `SELECT * FROM sqlite('__OUT__/__MARK__-7.sqlite', 't')`, 'external_access'],
];

interface Sinks {
  url: string;
  tcpPort: number;
  requests: string[];
  connections: number;
  close(): Promise<void>;
}

/** A local HTTP server and a TCP listener that record whatever reaches them (nothing may). */
async function startSinks(): Promise<Sinks> {
  const requests: string[] = [];
  const state = { connections: 0 };
  const http: Server = createHttpServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.end('a\nreached\n');
  });
  const tcp: TcpServer = createTcpServer((socket) => {
    state.connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    tcpPort: (tcp.address() as AddressInfo).port,
    requests,
    get connections() {
      return state.connections;
    },
    close: async () => {
      await new Promise((resolve) => http.close(resolve));
      await new Promise((resolve) => tcp.close(resolve));
    },
  };
}

/** Files and directories under `dir` (recursively) whose name carries the marker. */
async function marked(dir: string, recursive = true): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive, withFileTypes: true });
  return entries.filter((e) => e.name.includes(MARK)).map((e) => join(e.parentPath, e.name));
}

/** Databases, tables with their row counts, user-defined functions: what a write would change. */
const stateQuery = sql(
  't.guard_state',
  `SELECT
     (SELECT arraySort(groupArray(name)) FROM system.databases) AS databases,
     (SELECT arraySort(groupArray(concat(database, '.', name, ' ', toString(ifNull(total_rows, 0)))))
        FROM system.tables WHERE database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema')) AS tables,
     (SELECT count() FROM system.functions WHERE origin != 'System') AS functions`,
);
const pathsQuery = sql('t.guard_paths', `SELECT name, value FROM system.server_settings WHERE name IN ('path', 'user_files_path')`);

async function insertClicks(warehouse: Warehouse, program: number): Promise<void> {
  const at = '2026-11-02 10:00:00.000000';
  await warehouse.insert(
    'click_recorded',
    [1, 2, 3].map((i) => ({
      event_id: `00000000-0000-4000-8000-${String(program).padStart(10, '0')}0${i}`,
      program_id: program,
      occurred_at: at,
      test: i === 3,
      click_id: `click-${program}-${i}`,
      partner_id: 11,
      referral_link_id: 5,
      created_at: at,
    })),
    { dedupToken: `analytics-guard-${program}` },
  );
}

interface Target {
  /** Runs a query through the analysts' path of this target, answer in JSON lines. */
  run(query: string, params?: Record<string, string>): Promise<Buffer>;
  /** A connection with full rights on the same warehouse, for the checks. */
  admin: Warehouse;
  program: number;
  close(): Promise<void>;
}

let dir: string;
let out: string;
let canary: string;
let sinks: Sinks;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ats-analytics-guard-'));
  out = join(dir, 'out');
  await mkdir(out);
  canary = join(dir, 'canary.txt');
  await writeFile(canary, `${SECRET}\n`);
  sinks = await startSinks();
});
afterAll(async () => {
  await sinks?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const fill = (text: string) =>
  text.replaceAll('__MARK__', MARK).replaceAll('__CANARY__', canary).replaceAll('__OUT__', out).replaceAll('__URL__', sinks.url).replaceAll('__TCP__', String(sinks.tcpPort));

function guardSuite(name: string, open: () => Promise<Target>, skip = false): void {
  describe.skipIf(skip)(`the guard on ${name}`, () => {
    let target: Target;
    let watched: string[];
    beforeAll(async () => {
      target = await open();
      // Background merges change row counts (the rollups collapse rows): none while the counts are compared.
      await target.admin.command(sql('t.guard_stop_merges', 'SYSTEM STOP MERGES'));
      const paths = await target.admin.query<{ name: string; value: string }>(pathsQuery);
      watched = [...paths.map((p) => p.value), out];
    });
    afterAll(async () => {
      await target?.admin.command(sql('t.guard_start_merges', 'SYSTEM START MERGES'));
      await target?.close();
    });

    it.each(CRAFTED)('refuses %s, and nothing is written, read or reached', async (_name, text, expected) => {
      const before = await target.admin.query(stateQuery);
      const outcome = await target.run(fill(text)).then(
        (bytes) => bytes,
        (error: unknown) => error,
      );
      expect(outcome, `ran: ${String(outcome)}`).toBeInstanceOf(Error);
      const error = outcome as Error;
      if (expected === 'failed') {
        expect(error).toBeInstanceOf(QueryFailed);
      } else {
        expect(error).toBeInstanceOf(QueryRefused);
        expect((error as QueryRefused).reason).toBe(expected);
      }
      expect(error.message.length).toBeGreaterThan(20);
      expect(error.message).not.toContain(SECRET);
      expect(await target.admin.query(stateQuery)).toEqual(before);
      const files = [...(await Promise.all(watched.map((d) => marked(d)))).flat(), ...(await marked(process.cwd(), false))];
      expect(files).toEqual([]);
      expect(sinks.requests).toEqual([]);
      expect(sinks.connections).toBe(0);
    });

    it('still answers SELECTs: a join of views with a bound parameter, heredocs, comments, WITH', async () => {
      const rows = async (query: string, params?: Record<string, string>) =>
        (await target.run(query, params))
          .toString('utf8')
          .split('\n')
          .filter(Boolean)
          // 64-bit integers come quoted or not depending on the target's defaults: compared as text.
          .map((line) => Object.fromEntries(Object.entries(JSON.parse(line) as Record<string, unknown>).map(([k, v]) => [k, String(v)])));
      const program = String(target.program);
      const join = `SELECT c.click_id AS click_id, n.clicks AS clicks
        FROM analytics.clicks AS c
        INNER JOIN (SELECT program_id, count() AS clicks FROM analytics.clicks WHERE program_id = {program:Int64} GROUP BY program_id) AS n USING (program_id)
        WHERE c.program_id = {program:Int64} AND NOT c.is_test ORDER BY click_id -- two real clicks`;
      expect(await rows(join, { program })).toEqual([
        { click_id: `click-${program}-1`, clicks: '3' },
        { click_id: `click-${program}-2`, clicks: '3' },
      ]);
      expect(await rows(`SELECT $$a;b -- c$$ AS x, $t$ 'q' $t$ AS y, 'it''s' AS z /* ; /* nested */ */ -- ;\n;`)).toEqual([{ x: 'a;b -- c', y: " 'q' ", z: "it's" }]);
      expect(await rows(`WITH (SELECT count() FROM analytics.clicks WHERE program_id = {program:Int64}) AS n SELECT n, 1 AS \`a;b\``, { program })).toEqual([{ n: '3', 'a;b': '1' }]);
      expect(await rows(`SELECT number FROM numbers(3) WHERE number IN (SELECT number FROM numbers(2))`)).toEqual([{ number: '0' }, { number: '1' }]);
    });
  });
}

/** The embedded warehouse of a test: chDB in this process, migrated, three clicks of program 7. */
async function embeddedWarehouse(path: string): Promise<Warehouse> {
  const warehouse = await openWarehouse({ kind: 'chdb', path });
  await migrateWarehouse(warehouse);
  await insertClicks(warehouse, 7);
  return warehouse;
}

let embedded: Warehouse | undefined;
const sharedEmbedded = async () => (embedded ??= await embeddedWarehouse(join(dir, 'ch')));
afterAll(async () => {
  await embedded?.close();
});

guardSuite('chDB in this process', async () => {
  const warehouse = await sharedEmbedded();
  return {
    run: (query, params) => runAnalyticsQuery(warehouseAccess(warehouse), { query, params, format: 'jsonl' }, LIMITS),
    admin: warehouse,
    program: 7,
    close: async () => {},
  };
});

guardSuite('the SQL endpoint of a running service (queries/analytics/endpoint.ts)', async () => {
  const warehouse = await sharedEmbedded();
  const config = loadConfig({ DATA_DIR: dir, SQL_PORT: '0', CLICKHOUSE_URL: '' });
  const endpoint: SqlEndpoint = await serveSqlEndpoint({ warehouse, config: config.analytics, dataDir: dir, logger: createLogger('silent') });
  const record = await runningService(dir);
  if (!record) throw new Error('the endpoint wrote no record');
  const session = await openSqlSession({ kind: 'service', endpoint: record });
  return {
    run: (query, params) => session.run({ query, params, format: 'jsonl' }, LIMITS),
    admin: warehouse,
    program: 7,
    close: async () => {
      await session.close();
      await endpoint.close();
    },
  };
});

/** The distributed mode: a program of its own on the shared server, migrated as its default user. */
async function distributed(url: string): Promise<Target> {
  const admin = await openWarehouse({ kind: 'http', url: CLICKHOUSE_URL! });
  await migrateWarehouse(admin);
  const program = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  await insertClicks(admin, program);
  const session: SqlSession = await openSqlSession({ kind: 'distributed', url });
  return {
    run: (query, params) => session.run({ query, params, format: 'jsonl' }, LIMITS),
    admin,
    program,
    close: async () => {
      await session.close();
      await admin.close();
    },
  };
}

guardSuite('ClickHouse over HTTP, default user (readonly = 1 per request)', () => distributed(CLICKHOUSE_URL!), !CLICKHOUSE_URL);
guardSuite('ClickHouse over HTTP, the analyst user (readonly profile, SELECT on analytics.* only)', () => distributed(analystUrl(CLICKHOUSE_URL!)), !CLICKHOUSE_URL);

/** The engine's read-only session every step of the guard runs in (Warehouse.readOnly), in both modes. */
function readOnlySessionSuite(name: string, open: () => Promise<{ warehouse: Warehouse; analyst: boolean; close(): Promise<void> }>, skip = false): void {
  describe.skipIf(skip)(`the read-only session on ${name}`, () => {
    it('has readonly = 1 and the limits as its own settings, which no statement can change, and refuses writes and file() by itself', async () => {
      const { warehouse, analyst, close } = await open();
      const session = await warehouse.readOnly!({ maxExecutionSeconds: 7, maxMemoryBytes: 123_000_000 });
      const run = (text: string) => session.bytes(sql('t.guard_session', text), {}, 'TabSeparated').then((b) => b.toString('utf8'));
      // The analyst is refused by its grants and profile constraints too, whichever ClickHouse checks first.
      const refused = analyst ? /readonly|privileges|shouldn't be greater/i : /readonly/i;
      try {
        expect(await run(`SELECT getSetting('readonly'), getSetting('max_execution_time'), getSetting('max_memory_usage')`)).toBe('1\t7\t123000000\n');
        await expect(run(`SELECT 1 SETTINGS max_execution_time = 100000`)).rejects.toThrow(refused);
        await expect(run(`SET readonly = 0`)).rejects.toThrow(/readonly/i);
        await expect(run(`CREATE TABLE guard_session_table (a Int8) ENGINE = Memory`)).rejects.toThrow(refused);
        await expect(run(`INSERT INTO FUNCTION file('${join(out, 'session.csv')}', 'CSV', 'a String') SELECT 'x'`)).rejects.toThrow(refused);
        await expect(run(`SELECT * FROM file('${canary}', 'LineAsString')`)).rejects.toThrow(refused);
        expect(existsSync(join(out, 'session.csv'))).toBe(false);
        // The table functions that reach files, URLs and other servers, without the guard's check:
        // refused by the engine before they reach anything (sqlite() is not here: it creates its
        // file first, one of the gaps the guard's AST check covers, as are file() the function,
        // INTO OUTFILE and a subquery's SETTINGS).
        for (const text of [
          `SELECT * FROM url('__URL__/session', 'CSV', 'a String')`,
          `SELECT * FROM s3('__URL__/bucket/session.csv', 'CSV', 'a String')`,
          `SELECT * FROM remote('127.0.0.1:__TCP__', system.one)`,
          `SELECT * FROM postgresql('127.0.0.1:__TCP__', 'db', 't', 'u', 'p')`,
          `SELECT * FROM mysql('127.0.0.1:__TCP__', 'db', 't', 'u', 'p')`,
          `SELECT * FROM executable('cat __CANARY__', 'LineAsString', 'a String')`,
        ]) {
          await expect(run(fill(text))).rejects.toThrow(refused);
        }
        expect(sinks.requests).toEqual([]);
        expect(sinks.connections).toBe(0);
        // The limit is the session's: a query the text does not limit is stopped at 1 s.
        const short = await warehouse.readOnly!({ maxExecutionSeconds: 1, maxMemoryBytes: 123_000_000 });
        try {
          await expect(short.bytes(sql('t.guard_slow', `SELECT count() FROM numbers(1000000000000)`), {}, 'TabSeparated')).rejects.toThrow(/Timeout exceeded/);
        } finally {
          await short.close();
        }
      } finally {
        await session.close();
        await close();
      }
    });
  });
}

readOnlySessionSuite('chDB (a connection of its own; the loader\'s stays writable)', async () => {
  const warehouse = await sharedEmbedded();
  return {
    warehouse,
    analyst: false,
    close: async () => {
      expect(await warehouse.query(sql('t.guard_loader_writable', `SELECT getSetting('readonly') AS r`))).toEqual([{ r: 0 }]);
    },
  };
});
readOnlySessionSuite(
  'ClickHouse over HTTP, default user (settings of every request)',
  async () => {
    const warehouse = await openWarehouse({ kind: 'http', url: CLICKHOUSE_URL! });
    return { warehouse, analyst: false, close: () => warehouse.close() };
  },
  !CLICKHOUSE_URL,
);
readOnlySessionSuite(
  'ClickHouse over HTTP, the analyst user (its profile\'s readonly, the limits per request)',
  async () => {
    const warehouse = await openWarehouse({ kind: 'http', url: analystUrl(CLICKHOUSE_URL!) });
    return { warehouse, analyst: true, close: () => warehouse.close() };
  },
  !CLICKHOUSE_URL,
);
