/**
 * Issue 34, point 4 (PGlite and Postgres): a month's statement per partner and currency with the
 * program totals and the digest of its canonical JSON; the opening is the previous month's closing.
 * The replay check (verify-statement) is tests/scripts/verify-statement.test.ts. Issue 33, point 9:
 * a statement read from the stored checkpoints and the rows since is the statement read from every row.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { statement } from '../../../domain/ledger/statements.js';
import { databaseKinds } from '../../support/databases.js';
import { moneyProgram, moneyTestApp, sale, wholeMonth } from '../../support/money.js';

const month = (d: Date) => d.toISOString().slice(0, 7);
const previousMonth = (d: Date) => month(new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 15)));

describe.each(databaseKinds())('statements (%s)', (kind) => {
  const money = moneyTestApp(kind);
  const { get } = money;

  it('a whole month: lines by kind, closing = opening + the rest, program totals, and the digest of the canonical JSON', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const payout = await wholeMonth(money.app, p);
    expect(payout.amount_minor).toBe(8_400);
    const period = month(new Date());
    const res = await get(`${p.base}/statements/${period}`, p.member);
    expect(res.statusCode).toBe(200);
    const statement = res.json().data;
    expect(statement.partners).toEqual([
      {
        partner_id: p.partnerId, currency: 'USD', opening: 0, commissions: 8_500, adjustments: -100, reversals: 0, clawbacks: -5_000, manual: 200,
        payouts: -8_400, closing: -4_800,
      },
    ]);
    expect(statement.totals).toEqual([{ currency: 'USD', gross_sales: 85_000, refunds: 51_000, net_sales: 34_000, net_commissions: 3_400 }]);
    const { digest, ...body } = statement;
    expect(digest).toBe(createHash('sha256').update(canonicalize(body)!).digest('hex'));
    // Canonical: keys sorted, no whitespace, integers.
    expect(canonicalize(body)!.startsWith(`{"from":"${period}-01T00:00:00.000Z","partners":[{"adjustments":-100,`)).toBe(true);
    // Read again: the same digest.
    expect((await get(`${p.base}/statements/${period}`, p.owner)).json().data.digest).toBe(digest);
    // Beside the statement, not in it: its partners' names.
    expect(res.json().meta).toEqual({ partners: [{ partner_id: p.partnerId, partner_name: 'Partner' }] });
  });

  it('the opening balance is the previous month’s closing', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0 });
    await sale(money.app, p, 10_000);
    const now = new Date();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 20));
    // An entry of last month (an insert, as the functions write; the ledger takes no update).
    await money.db.many(
      sql(
        't.entry_last_month',
        `INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, cause, reason, created_at, available_at)
         VALUES ($1::bigint, $2, 'manual', 777, 'USD', 'manual:test:' || $1::text, 'carried over', $3, $3)`,
      ),
      [p.programId, p.partnerId, lastMonth.toISOString()],
    );
    const before = (await get(`${p.base}/statements/${previousMonth(now)}`, p.owner)).json().data;
    const current = (await get(`${p.base}/statements/${month(now)}`, p.owner)).json().data;
    expect(before.partners).toEqual([expect.objectContaining({ opening: 0, manual: 777, closing: 777 })]);
    expect(current.partners).toEqual([expect.objectContaining({ opening: 777, commissions: 1_000, closing: 1_777 })]);
    // A month before any activity: empty, with its digest.
    const empty = (await get(`${p.base}/statements/2020-01`, p.owner)).json().data;
    expect(empty).toMatchObject({ partners: [], totals: [], from: '2020-01-01T00:00:00.000Z', to: '2020-02-01T00:00:00.000Z' });
    expect(empty.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('read from its checkpoints (the previous month’s end, today’s midnight) and the rows since: the same statement as from every row', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    await wholeMonth(money.app, p);
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    // The program's entries and real and test sales again, recorded earlier (the rows are written
    // set-based here, as a back-fill would): in the middle of last month and, unless today is the
    // month's first day, earlier this month; so both checkpoints have lines and sales.
    const earlier = [new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15, 12)).toISOString()];
    if (midnight > monthStart) earlier.push(new Date(midnight.getTime() - 3_600_000).toISOString());
    for (const [i, at] of earlier.entries()) {
      await money.db.many(
        sql(
          't.statement_entries_earlier',
          `INSERT INTO ledger_entries (program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, payout_id, cause, reason, created_at, available_at)
           SELECT program_id, partner_id, kind, amount_minor, currency, commission_id, sale_id, payout_id, cause || ':earlier' || $2::text, reason, $3, $3
             FROM ledger_entries WHERE program_id = $1 AND cause NOT LIKE '%:earlier%'`,
        ),
        [p.programId, i, at],
      );
      await money.db.many(
        sql(
          't.statement_sales_earlier',
          `INSERT INTO sale_events (program_id, partner_id, transaction_id, amount_cents, currency, occurred_at, test, created_at)
           SELECT program_id, partner_id, transaction_id || ':earlier' || $2::text, amount_cents, currency, $3, test, $3
             FROM sale_events WHERE program_id = $1 AND transaction_id NOT LIKE '%:earlier%'`,
        ),
        [p.programId, i, at],
      );
    }
    const fromRows = async (period: string) => (await statement(money.db, p.programId, period, { checkpoints: false })).digest;
    for (const period of [previousMonth(now), month(now)]) {
      const first = (await get(`${p.base}/statements/${period}`, p.owner)).json().data;
      expect(first.digest).toBe(await fromRows(period));
      expect((await get(`${p.base}/statements/${period}`, p.owner)).json().data.digest).toBe(first.digest);
    }
    const current = (await get(`${p.base}/statements/${month(now)}`, p.owner)).json().data;
    expect(current.partners).toEqual([expect.objectContaining({ opening: -4_800, commissions: 8_500 * earlier.length, closing: -4_800 * (earlier.length + 1) })]);
    const stored = await money.db.many<{ upto: Date }>(
      sql('t.statement_checkpoints', `SELECT upto FROM statement_checkpoints WHERE program_id = $1 ORDER BY upto`),
      [p.programId],
    );
    // The previous month's end, and this month's latest midnight (none on the month's first day, nor in the minute after midnight).
    const instants = stored.map((r) => new Date(r.upto).toISOString());
    expect(instants).toContain(monthStart.toISOString());
    if (midnight > monthStart && now.getTime() >= midnight.getTime() + 60_000) expect(instants).toContain(midnight.toISOString());
    // An entry recorded after the checkpoints: read from the rows since.
    await money.post(`${p.base}/partners/${p.partnerId}/adjustments`, { ...p.owner, 'idempotency-key': 'after-checkpoints' }, { amount_minor: 300, currency: 'USD', reason: 'Late bonus' });
    const after = (await get(`${p.base}/statements/${month(now)}`, p.owner)).json().data;
    expect(after.partners[0].manual).toBe(current.partners[0].manual + 300);
    expect(after.digest).toBe(await fromRows(month(now)));
  });
});
