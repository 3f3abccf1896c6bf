/**
 * Issue 34, point 6: `svc payouts <programId>` lists a program's partner balances and its payouts,
 * read with the account login token through GET /api/v1/cli/programs/:programId/payouts (the
 * command in process, against the service listening on a port).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../clients/cli/src/program.js';
import { sql } from '../../../core/db.js';
import { hashSecret } from '../../../domain/access/secrets.js';
import { buildTestApp } from '../../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';
import { moneyProgram, sale, type MoneyProgram } from '../../support/money.js';

describe.each(databaseKinds())('svc payouts (%s)', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let base: string;
  let home: string;
  let p: MoneyProgram;
  let other: MoneyProgram;
  let token: string;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    home = await mkdtemp(join(tmpdir(), 'ats-svc-payouts-'));
    p = await moneyProgram(app, t.db, { holdDays: 0, minimum: 100 });
    other = await moneyProgram(app, t.db, { holdDays: 0, minimum: 100 });
    await sale(app, p, 25_000);
    const [payout] = (await app.inject({ method: 'POST', url: `${p.base}/payouts`, headers: p.owner, payload: {} })).json().data.payouts;
    await app.inject({ method: 'POST', url: `${p.base}/payouts/${payout.id}/mark-paid`, headers: p.owner, payload: { reference: 'PP-77' } });
    await sale(app, p, 10_000);
    // A login token of the program's member, as `svc login` would have stored it (only its hash is kept).
    token = `clt_${randomBytes(24).toString('base64url')}`;
    await t.db.many(
      sql(
        't.cli_token',
        `INSERT INTO cli_login_tokens (user_id, token_hash, expires_at)
         SELECT user_id, $2, now() + interval '1 day' FROM members WHERE workspace_id = $1 AND role = 'member'`,
      ),
      [p.workspace.workspaceId, hashSecret(token)],
    );
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  async function svc(args: string[], loginToken: string | undefined = token) {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.on('data', (d: Buffer) => (out += d.toString()));
    stderr.on('data', (d: Buffer) => (err += d.toString()));
    const env = { baseUrl: base, loginToken, programKey: undefined, configDir: join(home, 'svc'), hasDisplay: false, platform: process.platform };
    const code = await runCli(args, { stdout, stderr, stdin: new PassThrough() }, env);
    return { code, out, err };
  }

  it('prints the balances and the payouts of a program of the account', async () => {
    const run = await svc(['payouts', String(p.programId)]);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toContain(`Balances of program ${p.programId}`);
    // Each partner by its name, with its id (names need not be unique).
    const { name } = (await t.db.one<{ name: string }>(sql('t.partner_name', `SELECT name FROM partners WHERE id = $1`), [p.partnerId]))!;
    const partner = `${name} (${p.partnerId})`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(run.out).toMatch(new RegExp(`${partner}\\s+0\\.00 USD\\s+0\\.00 USD\\s+10\\.00 USD\\s+0\\.00 USD\\s+25\\.00 USD\\s+10\\.00 USD`));
    expect(run.out).toMatch(new RegExp(`${partner}\\s+25\\.00 USD\\s+paid\\s+1\\s+\\S+\\s+PP-77`));

    const json = await svc(['--json', 'payouts', String(p.programId)]);
    const data = JSON.parse(json.out);
    expect(data.balances).toEqual([{ partner_id: p.partnerId, partner_name: name, currency: 'USD', pending: 0, held: 0, approved: 1_000, processing: 0, paid: 2_500, balance: 1_000 }]);
    expect(data.payouts).toEqual([expect.objectContaining({ partner_id: p.partnerId, partner_name: name, amount_minor: 2_500, status: 'paid', commissions: 1, reference: 'PP-77' })]);
  });

  it('a program of another advertiser is 404, no token is 401, a bad id a usage error', async () => {
    const foreign = await svc(['payouts', String(other.programId)]);
    expect(foreign.code).toBe(5);
    expect(foreign.err).toBe('Error: Program not found among the programs of your advertisers\n');
    expect((await svc(['payouts', String(p.programId)], `clt_${'x'.repeat(32)}`)).code).toBe(3);
    expect((await svc(['payouts', 'abc'])).code).toBe(2);
    const res = await app.inject({ method: 'GET', url: `/api/v1/cli/programs/${p.programId}/payouts` });
    expect(res.statusCode).toBe(401);
  });
});
