/**
 * Issue 30, points 5 and 6: daily exchange rates loaded through the owners' endpoint
 * (POST /api/tracking/fx-rates) and the operator's command (npm run ops -- import-fx-rates), and
 * the program's reporting_currency. A file is stored whole or refused whole: every bad input gets
 * the platform envelope (or the command's lines with their line numbers) and writes nothing, on
 * PGlite and Postgres.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { FX_RATES_HELP, runOperatorCommand } from '../../../ingest/operator/commands.js';
import { buildTestApp, createTestProgram, createTestWorkspace, type TestProgram, type Workspace } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** An ECB-style file: a trailing comma on every line, N/A where no rate was published. */
const ecbFile = [`Date,USD,JPY,VND,`, `${daysAgo(1)},1.0512,163.27,27395.5,`, `${daysAgo(2)},1.0498,N/A,27380,`].join('\n') + '\n';

describe.each(databaseKinds())('exchange rates and the reporting currency (%s)', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let ws: Workspace;
  let other: Workspace;
  let p: TestProgram;
  let dir: string;

  const counts = async () =>
    t.db.one<{ rates: number; events: number; audit: number }>(
      sql(
        't.fx_counts',
        `SELECT (SELECT count(*) FROM fx_rates)::int AS rates,
                (SELECT count(*) FROM outbox WHERE event_type = 'fx_rate.recorded')::int AS events,
                (SELECT count(*) FROM audit_log WHERE action = 'fx_rates.imported')::int AS audit`,
      ),
    );
  const post = (token: string, payload: string | object, query = '') =>
    app.inject({
      method: 'POST',
      url: `/api/tracking/fx-rates${query}`,
      headers: { authorization: `Bearer ${token}`, ...(typeof payload === 'string' ? { 'content-type': 'text/csv' } : {}) },
      payload,
    });

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    ws = await createTestWorkspace(t.db);
    other = await createTestWorkspace(t.db);
    p = await createTestProgram(app, t.db, {}, ws);
    dir = await mkdtemp(join(tmpdir(), 'fx-rates-'));
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('an owner loads the ECB layout (text/csv): one rate, one event, one audit entry each; the same file again changes nothing', async () => {
    const res = await post(ws.ownerToken, ecbFile);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual({
      workspace_id: ws.workspaceId, read: 5, stored: 5, unchanged: 0, currencies: ['JPY', 'USD', 'VND'], first_day: daysAgo(2), last_day: daysAgo(1),
    });
    expect(await counts()).toEqual({ rates: 5, events: 5, audit: 1 });
    const events = await t.db.many<{ program_id: number; aggregate_key: string; payload: Record<string, unknown> }>(
      sql('t.fx_events', `SELECT program_id, aggregate_key, payload FROM outbox WHERE event_type = 'fx_rate.recorded' ORDER BY id`),
    );
    expect(events.map((e) => Number(e.program_id))).toEqual([0, 0, 0, 0, 0]);
    expect(events.find((e) => e.payload.currency === 'VND' && e.payload.day === daysAgo(1))?.payload).toMatchObject({
      workspace_id: ws.workspaceId, per_eur: '27395.5',
    });
    // JSON body, same rates written with other zeros: numerically equal, nothing new.
    const again = await post(ws.ownerToken, { csv: ecbFile.replace('1.0512', '1.05120') });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().data).toMatchObject({ stored: 0, unchanged: 5 });
    expect(await counts()).toEqual({ rates: 5, events: 5, audit: 1 });
  });

  it('any ISO 4217 column is allowed: EUR-based rates for VND alone (a charset on the content type is fine)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/tracking/fx-rates',
      headers: { authorization: `Bearer ${ws.ownerToken}`, 'content-type': 'text/csv; charset=utf-8' },
      payload: `\uFEFFDate,VND\r\n${daysAgo(3)},27350\r\n`,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ stored: 1, currencies: ['VND'] });
  });

  const refusals: [string, string, RegExp][] = [
    ['an unknown currency', `Date,USD,XYZ\n${daysAgo(4)},1.1,2\n`, /line 1: column 3: "XYZ" is not an ISO 4217 currency code/],
    ['EUR, the base', `Date,EUR\n${daysAgo(4)},1\n`, /line 1: column 2: EUR is the base/],
    ['a negative rate', `Date,USD,VND\n${daysAgo(4)},1.1,27000\n${daysAgo(5)},-1.1,27000\n`, /line 3: USD on .*: "-1.1" is not a positive rate/],
    ['a zero rate', `Date,USD\n${daysAgo(4)},0.0000\n`, /line 2: USD on .*: "0.0000" is not a positive rate/],
    ['a malformed date', `Date,USD\n2026-02-30,1.1\n`, /line 2: "2026-02-30" is not a date/],
    ['a day to come', `Date,USD\n2099-01-01,1.1\n`, /line 2: 2099-01-01 is outside/],
    ['a row of another width', `Date,USD,VND\n${daysAgo(4)},1.1\n`, /line 2: 2 cells where the header has 3/],
    ['no header', `${daysAgo(4)},1.1\n`, /line 1: the header must start with Date/],
    ['two values for one day', `Date,USD\n${daysAgo(4)},1.1\n${daysAgo(4)},1.2\n`, /line 3: USD on .*: 1.2 contradicts 1.1 on line 2/],
    ['a value unlike the stored one', `Date,USD\n${daysAgo(6)},1.3\n${daysAgo(1)},1.2\n`, /line 3: USD on .*: 1.0512 is already stored; a stored rate is fixed/],
  ];

  it.each(refusals)('%s: 400 in the platform envelope with the line, nothing written', async (_name, csv, message) => {
    const before = await counts();
    const res = await post(ws.ownerToken, csv);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json();
    expect(body.data).toBeNull();
    expect(body.error).toMatchObject({ status: 400, name: 'BadRequestError' });
    expect(body.error.message).toMatch(/^The rates file was refused, nothing was stored: /);
    expect(body.error.message).toMatch(message);
    expect(body.error.details.problems.length).toBeGreaterThan(0);
    expect(await counts()).toEqual(before);
  });

  it('members are refused (owners only), another workspace is refused, an empty body is refused: nothing written', async () => {
    const before = await counts();
    const member = await post(ws.memberToken, ecbFile.replace('1.0512', '1.06'));
    expect(member.statusCode).toBe(403);
    expect(member.json().error.message).toBe('Only a workspace owner can load exchange rates');
    const stranger = await post(other.ownerToken, `Date,USD\n${daysAgo(9)},1.1\n`, `?workspace_id=${ws.workspaceId}`);
    expect(stranger.statusCode).toBe(403);
    const empty = await post(ws.ownerToken, {});
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.message).toMatch(/^csv is required/);
    const badWorkspace = await post(ws.ownerToken, { csv: 'Date,USD' }, '?workspace_id=abc');
    expect(badWorkspace.statusCode).toBe(400);
    const unauthenticated = await app.inject({ method: 'POST', url: '/api/tracking/fx-rates', payload: { csv: 'Date,USD' } });
    expect(unauthenticated.statusCode).toBe(401);
    expect(await counts()).toEqual(before);
    // The other workspace's own rates for the same day are its own: no conflict with ws's.
    const own = await post(other.ownerToken, { csv: `Date,USD\n${daysAgo(1)},1.5\n` });
    expect(own.statusCode, own.body).toBe(200);
  });

  it('the operator command loads the operator rates, prints each problem with its line, writes nothing on a refusal', async () => {
    const file = join(dir, 'eurofxref-hist.csv');
    await writeFile(file, ecbFile);
    expect(await runOperatorCommand(t.db, 'import-fx-rates', [file])).toEqual([
      `${file}: 5 rate(s) stored, 0 already stored with the same value; JPY, USD, VND from ${daysAgo(2)} to ${daysAgo(1)}`,
    ]);
    expect(await runOperatorCommand(t.db, 'import-fx-rates', [file])).toEqual([
      `${file}: 0 rate(s) stored, 5 already stored with the same value; JPY, USD, VND from ${daysAgo(2)} to ${daysAgo(1)}`,
    ]);
    const operatorRates = sql('t.fx_operator', `SELECT count(*)::int AS n FROM fx_rates WHERE workspace_id = 0`);
    expect((await t.db.one<{ n: number }>(operatorRates))!.n).toBe(5);

    const bad = join(dir, 'bad.csv');
    await writeFile(bad, `Date,USD,GBP\n${daysAgo(7)},1.1,0.85\n${daysAgo(8)},abc,0.86\n${daysAgo(1)},1.2,N/A\n`);
    const before = await counts();
    await expect(runOperatorCommand(t.db, 'import-fx-rates', [bad])).rejects.toThrow(`${bad}:3: USD on ${daysAgo(8)}: "abc" is not a positive rate`);
    // The parse was clean but the last line contradicts a stored rate: the whole file is refused.
    await writeFile(bad, `Date,USD,GBP\n${daysAgo(7)},1.1,0.85\n${daysAgo(1)},1.2,N/A\n`);
    await expect(runOperatorCommand(t.db, 'import-fx-rates', [bad])).rejects.toThrow(`${bad}:3: USD on ${daysAgo(1)}: 1.0512 is already stored`);
    expect(await counts()).toEqual(before);
    await expect(runOperatorCommand(t.db, 'import-fx-rates', [join(dir, 'missing.csv')])).rejects.toThrow(/missing\.csv: ENOENT/);
    expect(await runOperatorCommand(t.db, 'import-fx-rates', ['--help'])).toEqual([FX_RATES_HELP]);
    expect(FX_RATES_HELP).toMatch(/Date,USD,JPY,VND/);
  });

  it('reporting_currency: USD by default, any ISO 4217 code in any case, an unknown one refused and nothing written', async () => {
    const url = `/api/tracking/programs/${p.programId}`;
    const auth = { authorization: `Bearer ${ws.memberToken}` };
    expect((await app.inject({ method: 'GET', url, headers: auth })).json().data.reporting_currency).toBe('USD');
    const changed = await app.inject({ method: 'PATCH', url, headers: auth, payload: { reporting_currency: 'eur' } });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data.reporting_currency).toBe('EUR');
    const audit = sql('t.fx_program_audit', `SELECT count(*)::int AS n FROM audit_log WHERE program_id = $1 AND action = 'program.updated'`);
    const entries = (await t.db.one<{ n: number }>(audit, [p.programId]))!.n;
    for (const value of ['XYZ', 'EURO', 12, '', null]) {
      const res = await app.inject({ method: 'PATCH', url, headers: auth, payload: { reporting_currency: value } });
      expect(res.statusCode, String(value)).toBe(400);
      expect(res.json().error.message).toBe('reporting_currency must be an ISO 4217 currency code such as USD, EUR or VND');
    }
    expect((await t.db.one<{ n: number }>(audit, [p.programId]))!.n).toBe(entries);
    expect((await app.inject({ method: 'GET', url, headers: auth })).json().data.reporting_currency).toBe('EUR');
  });

  it('a stored rate is fixed in the database too: UPDATE and DELETE are refused', async () => {
    await expect(t.db.many(sql('t.fx_update', `UPDATE fx_rates SET per_eur = 2 WHERE currency = 'USD'`))).rejects.toThrow(/a stored rate is fixed/);
    await expect(t.db.many(sql('t.fx_delete', `DELETE FROM fx_rates`))).rejects.toThrow(/a stored rate is fixed/);
  });
});
