/**
 * npm run sql: the read-only guard (refusals write nothing), the limits, the output formats, and
 * the three targets: the running service's SQL endpoint, the stopped service's data directory,
 * CLICKHOUSE_URL. The guard runs here on an in-process chDB; the targets with the real main.ts
 * and scripts/sql.ts processes on a data directory of their own.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../core/config.js';
import { sql } from '../../../core/db.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { QueryRefused, type RefusalReason } from '../../../queries/analytics/guard.js';
import { QueryFailed, runAnalyticsQuery, warehouseAccess, type AnalyticsRequest } from '../../../queries/analytics/run.js';
import { chooseTarget, openSqlSession, runningService } from '../../../queries/analytics/target.js';
import { ENDPOINT_FILE } from '../../../queries/analytics/endpoint.js';
import { runScript, startService, waitFor } from '../../support/scripts.js';

const LIMITS = { maxExecutionSeconds: 30, maxMemoryBytes: 1_000_000_000 };

describe('the read-only guard, limits and formats (chDB in this process)', () => {
  let dir: string;
  let warehouse: Warehouse;
  const run = (query: string, extra: Partial<AnalyticsRequest> = {}, limits = LIMITS) =>
    runAnalyticsQuery(warehouseAccess(warehouse), { query, format: 'jsonl', ...extra }, limits);
  const state = sql('t.analytics_state', `SELECT (SELECT count() FROM system.tables WHERE database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema')) AS tables, (SELECT count() FROM click_recorded) AS clicks`);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-analytics-sql-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
    const at = '2026-11-02 10:00:00.000000';
    await warehouse.insert(
      'click_recorded',
      [1, 2, 3].map((i) => ({
        event_id: `00000000-0000-4000-8000-00000000000${i}`,
        program_id: 7,
        occurred_at: at,
        test: i === 3,
        click_id: `click-${i}`,
        partner_id: 11,
        referral_link_id: 5,
        created_at: at,
      })),
      { dedupToken: 'analytics-sql-test' },
    );
  });
  afterAll(async () => {
    await warehouse?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const refusals: [string, string, RefusalReason][] = [
    ['INSERT', `INSERT INTO click_recorded (event_id, program_id, click_id) VALUES (generateUUIDv4(), 1, 'x')`, 'not_a_select'],
    ['ALTER', `ALTER TABLE click_recorded DELETE WHERE 1`, 'not_a_select'],
    ['CREATE', `CREATE TABLE evil (a Int8) ENGINE = Memory`, 'not_a_select'],
    ['DROP', `DROP TABLE click_recorded`, 'not_a_select'],
    ['a second statement', `SELECT 1; DROP TABLE click_recorded`, 'multiple_statements'],
    ['a second statement after a comment', `SELECT 1 /* ; */ -- x\n; TRUNCATE TABLE click_recorded`, 'multiple_statements'],
    ['file() table function', `SELECT * FROM file('/etc/hostname', 'LineAsString')`, 'external_access'],
    ['file() in a subquery', `SELECT count() FROM (SELECT * FROM file('/etc/hostname', 'LineAsString'))`, 'external_access'],
    ['the file() function', `SELECT file('/etc/hostname')`, 'external_access'],
    ['url()', `SELECT * FROM url('http://127.0.0.1:9/x.csv', 'CSV', 'a String')`, 'external_access'],
    ['s3()', `SELECT * FROM s3('http://127.0.0.1:9/bucket/x.csv', 'CSV', 'a String')`, 'external_access'],
    ['postgresql()', `SELECT * FROM postgresql('127.0.0.1:5432', 'postgres', 'outbox', 'postgres', '')`, 'external_access'],
    ['INTO OUTFILE', `SELECT 1 INTO OUTFILE '__OUT__'`, 'into_outfile'],
    ['SETTINGS readonly = 0', `SELECT * FROM analytics.clicks SETTINGS readonly = 0`, 'settings_clause'],
    ['SETTINGS in a subquery', `SELECT * FROM (SELECT * FROM analytics.clicks SETTINGS max_execution_time = 100000)`, 'settings_clause'],
    ['a FORMAT clause', `SELECT 1 FORMAT CSV`, 'format_clause'],
    ['SET', `SET readonly = 0`, 'not_a_select'],
  ];

  it.each(refusals)('refuses %s with a clear error and writes nothing', async (_name, query, reason) => {
    const outfile = join(dir, 'outfile.txt');
    const before = await warehouse.query(state);
    const error = await run(query.replace('__OUT__', outfile)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryRefused);
    expect((error as QueryRefused).reason).toBe(reason);
    expect((error as Error).message.length).toBeGreaterThan(20);
    expect(await warehouse.query(state)).toEqual(before);
    expect(existsSync(outfile)).toBe(false);
  });

  it('leaves the refusal of writes and external reads to ClickHouse too: the session it runs in is read-only', async () => {
    // The guard's checks skipped: the engine's own read-only mode refuses the table function.
    const session = await warehouse.readOnly!(LIMITS);
    try {
      const raw = sql('t.raw_readonly', `SELECT * FROM file('/etc/hostname', 'LineAsString')`);
      await expect(session.bytes(raw, {}, 'CSV')).rejects.toThrow(/readonly/i);
    } finally {
      await session.close();
    }
    // The loader's connection stays writable: the read-only one was another.
    expect(await warehouse.query(sql('t.readonly_after', `SELECT getSetting('readonly') AS r`))).toEqual([{ r: 0 }]);
  });

  it('a text ClickHouse cannot parse fails with its words, and writes nothing', async () => {
    const before = await warehouse.query(state);
    const error = await run(`SELECT 1) UNION ALL (SELECT 2`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryFailed);
    expect((error as Error).message).toMatch(/^Not a valid query: Syntax error: .*Unmatched parentheses/);
    expect(await warehouse.query(state)).toEqual(before);
  });

  it('answers SELECTs on the analytics views in CSV, JSON lines, Parquet and a table, with bound parameters', async () => {
    const query = `SELECT click_id, is_test FROM analytics.clicks WHERE program_id = {program:Int64} ORDER BY click_id`;
    const params = { program: '7' };
    expect((await run(query, { params, format: 'csv' })).toString()).toBe('"click_id","is_test"\n"click-1",false\n"click-2",false\n"click-3",true\n');
    const lines = (await run(query, { params, format: 'jsonl' })).toString().trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { click_id: 'click-1', is_test: false },
      { click_id: 'click-2', is_test: false },
      { click_id: 'click-3', is_test: true },
    ]);
    const parquet = await run(query, { params, format: 'parquet' });
    expect(parquet.subarray(0, 4).toString()).toBe('PAR1');
    expect(parquet.subarray(-4).toString()).toBe('PAR1');
    // Read back by ClickHouse (outside the guard, which would refuse file()): three rows.
    const file = join(dir, 'clicks.parquet');
    await writeFile(file, parquet);
    const back = await warehouse.query(sql('t.parquet_back', `SELECT count() AS n, countIf(is_test) AS tests FROM file({file:String}, Parquet)`), { file });
    expect(back).toEqual([{ n: 3, tests: 1 }]);
    const table = (await run(query, { params, format: 'table' })).toString();
    expect(table).toMatch(/click_id.*is_test/);
    expect(table).toContain('click-3');
    // A trailing comment and a `;` are fine.
    expect((await run(`SELECT count() AS n FROM analytics.clicks WHERE NOT is_test; -- real clicks`)).toString()).toBe('{"n":2}\n');
  });

  it('reads `;` inside strings, quoted names and comments as text, not as a statement end', async () => {
    const query = `SELECT ';' AS "a;b", 'it''s;' AS t, 'x\\';' AS u /* ; /* nested ; */ */ -- ;\n;`;
    expect((await run(query)).toString()).toBe(`{"a;b":";","t":"it's;","u":"x';"}\n`);
  });

  it('stops a query at the time limit and at the memory limit', async () => {
    const slow = await run(`SELECT count() FROM numbers(1000000000000)`, {}, { ...LIMITS, maxExecutionSeconds: 1 }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(QueryFailed);
    expect((slow as QueryFailed).limit).toBe('time');
    expect((slow as Error).message).toMatch(/longer than 1 s/);
    const big = await run(`SELECT groupArray(number) FROM numbers(50000000)`, {}, { ...LIMITS, maxMemoryBytes: 20_000_000 }).catch((e: unknown) => e);
    expect(big).toBeInstanceOf(QueryFailed);
    expect((big as QueryFailed).limit).toBe('memory');
  });

  it('runs beside the loader: an insert does not wait for a long analyst query', async () => {
    const slow = run(`SELECT count() FROM numbers(1000000000000)`, {}, { ...LIMITS, maxExecutionSeconds: 3 }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const at = '2026-11-03 10:00:00.000000';
    await warehouse.insert(
      'click_recorded',
      [{ event_id: '00000000-0000-4000-8000-000000000009', program_id: 8, occurred_at: at, test: false, click_id: 'click-beside', partner_id: 11, referral_link_id: 5, created_at: at }],
      { dedupToken: 'analytics-sql-beside' },
    );
    const insertMs = Date.now() - started;
    expect(((await slow) as QueryFailed).limit).toBe('time');
    // The query ran for 3 s; the insert was acknowledged long before it ended.
    expect(insertMs).toBeLessThan(2000);
  });
});

describe('where the query goes: running service, stopped service, CLICKHOUSE_URL', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ats-analytics-target-'));
    // The embedded mode: no DATABASE_URL, no CLICKHOUSE_URL, no Kafka (the shell's are for other tests).
    env = { DATA_DIR: dataDir, DATABASE_URL: '', CLICKHOUSE_URL: '', KAFKA_BROKERS: '', REDIS_URL: '', PORT: '0', SQL_PORT: '0', LOG_LEVEL: 'warn', SEED_DEMO: 'true' };
  });
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('CLICKHOUSE_URL set: the distributed target, and a clear error when that server does not answer', async () => {
    const config = loadConfig({ CLICKHOUSE_URL: 'http://analyst:secret@127.0.0.1:9/default', DATA_DIR: dataDir });
    const target = await chooseTarget(config);
    expect(target).toEqual({ kind: 'distributed', url: 'http://analyst:secret@127.0.0.1:9/default' });
    await expect(chooseTarget(config, { direct: true })).rejects.toThrow(/CLICKHOUSE_URL/);
    const session = await openSqlSession(target);
    try {
      await expect(session.run({ query: 'SELECT 1', format: 'csv' }, LIMITS)).rejects.toThrow(/ECONNREFUSED|connect/i);
    } finally {
      await session.close();
    }
  });

  it('service running: through its SQL endpoint with the operator token; --direct refused; stopped: the data directory itself', async () => {
    const service = startService(env);
    try {
      const endpoint = await waitFor('the SQL endpoint file', async () => (existsSync(join(dataDir, ENDPOINT_FILE)) ? runningService(dataDir) : undefined));
      expect(endpoint.pid).toBe(service.process.pid);
      expect(new URL(endpoint.url).hostname).toBe('127.0.0.1');
      expect((await stat(join(dataDir, ENDPOINT_FILE))).mode & 0o077).toBe(0);
      // The demo program's partner record reaches the warehouse through the embedded pipeline.
      await waitFor('the demo partner in analytics.partner_programs', async () => {
        const res = await fetch(`${endpoint.url}/sql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${endpoint.token}` },
          body: JSON.stringify({ query: 'SELECT count() AS n FROM analytics.partner_programs', format: 'jsonl' }),
        });
        return res.ok && ((await res.json()) as { n: number }).n > 0 ? true : undefined;
      });

      const ok = await runScript('scripts/sql.ts', ['--format', 'jsonl', 'SELECT status, is_test FROM analytics.partner_programs'], env);
      expect(ok.stderr).toMatch(/running service \(pid \d+/);
      expect(JSON.parse(ok.stdout.trim())).toEqual({ status: 'approved', is_test: false });

      const refused = await runScript('scripts/sql.ts', ['DROP TABLE analytics.sales'], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/Refused \(not_a_select\): Only SELECT queries/);

      // The texts (heredocs hiding a second statement), through npm run sql and the running
      // service: refused, no table created, no file written.
      const written = join(dataDir, 'written.csv');
      const heredocs = [
        `SELECT $$ ; $$ AS a; CREATE TABLE evil ENGINE = Memory AS SELECT * FROM file('/etc/hostname', 'LineAsString')`,
        `SELECT $$ -- $$ AS a; INSERT INTO FUNCTION file('${written}', 'CSV', 'a String') SELECT * FROM file('/etc/hostname', 'LineAsString')`,
      ];
      for (const text of heredocs) {
        const attempt = await runScript('scripts/sql.ts', [text], env);
        expect(attempt.code).toBe(2);
        expect(attempt.stderr).toMatch(/Refused \(multiple_statements\): Only one statement per query/);
      }
      expect(existsSync(written)).toBe(false);
      const evil = await runScript('scripts/sql.ts', ['--format', 'csv', `SELECT count() FROM system.tables WHERE name = 'evil'`], env);
      expect(evil.stdout).toBe('"count()"\n0\n');

      const direct = await runScript('scripts/sql.ts', ['--direct', 'SELECT 1'], env);
      expect(direct.code).toBe(1);
      expect(direct.stderr).toMatch(/is running and holds .*Run without --direct/s);

      // npm run export through the running service: Parquet files and a progress bar.
      const exportedLive = await runScript('scripts/export.ts', ['--tables', 'partner_programs,clicks', '--out-dir', join(dataDir, 'live')], env);
      expect(exportedLive.code).toBe(0);
      expect(exportedLive.stderr).toMatch(/exporting from the running service/);
      expect(exportedLive.stderr).toMatch(/\[#{24}\] 1\/1 rows written .*partner_programs\.parquet/);
      expect((await readFile(join(dataDir, 'live', 'partner_programs.parquet'))).subarray(0, 4).toString()).toBe('PAR1');
      expect(existsSync(join(dataDir, 'live', 'clicks.parquet'))).toBe(true);

      // A wrong token is refused by the endpoint.
      const wrong = await fetch(`${endpoint.url}/sql`, { method: 'POST', headers: { authorization: 'Bearer not-the-token-at-all-000000' }, body: '{"query":"SELECT 1"}' });
      expect(wrong.status).toBe(401);
      const none = await fetch(`${endpoint.url}/sql`, { method: 'POST', body: '{"query":"SELECT 1"}' });
      expect(none.status).toBe(401);
    } finally {
      service.process.kill('SIGTERM');
      await service.exited;
    }
    expect(service.log).not.toMatch(/shutdown failed/);
    expect(existsSync(join(dataDir, ENDPOINT_FILE))).toBe(false);

    // Stopped: the same query answered from the data directory, Parquet to a file.
    const stopped = await runScript('scripts/sql.ts', ['--format', 'csv', 'SELECT status FROM analytics.partner_programs'], env);
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toMatch(/service stopped/);
    expect(stopped.stdout).toBe('"status"\n"approved"\n');
    const out = join(dataDir, 'pp.parquet');
    const parquet = await runScript('scripts/sql.ts', ['--format', 'parquet', '--out', out, 'SELECT * FROM analytics.partner_programs'], env);
    expect(parquet.code).toBe(0);
    expect((await readFile(out)).subarray(0, 4).toString()).toBe('PAR1');
    const exported = await runScript('scripts/export.ts', ['--tables', 'partner_programs', '--format', 'csv', '--out-dir', join(dataDir, 'stopped'), '--from', '2000-01-01'], env);
    expect(exported.code).toBe(0);
    expect(exported.stderr).toMatch(/service stopped/);
    expect(await readFile(join(dataDir, 'stopped', 'partner_programs.csv'), 'utf8')).toMatch(/^"partner_program_id","program_id","partner_id","status","created_at","updated_at","is_test"\n\d+,\d+,\d+,"approved",/);
    const badRange = await runScript('scripts/export.ts', ['--from', '2026-12-01', '--to', '2026-11-01'], env);
    expect(badRange.code).toBe(1);
    expect(badRange.stderr).toMatch(/--from must be before --to/);
  }, 300_000);
});
