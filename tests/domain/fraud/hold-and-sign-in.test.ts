/**
 * Issue 31, point 5: what the portal's ban and sign-in call, on PGlite and Postgres:
 * hold_partner_commissions (pending and approved to held, each with commission.held; processing,
 * paid and reversed untouched; idempotent) and recordPartnerSignInAddress.
 */
import { describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { inetText, recordPartnerSignInAddress } from '../../../domain/fraud/sign-in-addresses.js';
import { databaseKinds } from '../../support/databases.js';
import { eventsOf, moneyProgram, moneyTestApp, sale } from '../../support/money.js';

const hold = sql('t.hold_partner', `SELECT hold_partner_commissions($1, $2, $3) AS moved`);
const states = sql('t.fraud_states', `SELECT id, status, hold_reasons, held_at FROM commissions WHERE program_id = $1 ORDER BY created_at, id`);

describe.each(databaseKinds())('hold_partner_commissions and sign-in addresses (%s)', (kind) => {
  const money = moneyTestApp(kind);

  it('holds pending and approved commissions once, each with commission.held; processing and reversed stay', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    const inPayout = await sale(money.app, p, 10_000);
    const run = await money.post(`${p.base}/payouts`, p.owner);
    expect(run.statusCode).toBe(200);
    const approved = await sale(money.app, p, 20_000);
    const rejected = await sale(money.app, p, 30_000);
    expect((await money.post(`${p.base}/commissions/${rejected.commissionId}/reject`, p.owner, { reason: 'no' })).statusCode).toBe(200);
    const other = await moneyProgram(money.app, money.db, { holdDays: 30 });
    const elsewhere = await sale(money.app, other, 10_000);

    const moved = await money.db.one<{ moved: number }>(hold, [p.programId, p.partnerId, 'partner_banned']);
    expect(moved!.moved).toBe(1);
    const rows = await money.db.many<{ id: string; status: string; hold_reasons: unknown; held_at: Date | null }>(states, [p.programId]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(inPayout.commissionId)!.status).toBe('approved'); // processing: in a pending payout
    expect(byId.get(rejected.commissionId)!.status).toBe('reversed');
    expect(byId.get(approved.commissionId)).toMatchObject({ status: 'held', hold_reasons: [{ reason: 'partner_banned' }] });
    expect((await money.get(`${p.base}/commissions/${approved.commissionId}`, p.owner)).json().data.status).toBe('held');
    const events = await eventsOf(money.db, p.programId, 'commission.held');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ commission_id: approved.commissionId, partner_id: p.partnerId, amount_cents: 2_000, reasons: ['partner_banned'] });
    // Another program's commission of the same kind is untouched.
    expect((await money.db.many<{ status: string }>(states, [other.programId]))[0]!.status).toBe('pending');
    void elsewhere;

    // Again: nothing moves, no second event.
    expect((await money.db.one<{ moved: number }>(hold, [p.programId, p.partnerId, 'partner_banned']))!.moved).toBe(0);
    expect(await eventsOf(money.db, p.programId, 'commission.held')).toHaveLength(1);
    // A held commission is approved by its owner through the commission endpoint.
    const ok = await money.post(`${p.base}/commissions/${approved.commissionId}/approve`, p.owner, { reason: 'Ban lifted' });
    expect(ok.json().data).toMatchObject({ status: 'approved' });
  });

  it('records each address a partner signed in from once, counting sign-ins', async () => {
    const p = await moneyProgram(money.app, money.db);
    expect(await recordPartnerSignInAddress(money.db, { partnerId: p.partnerId, clientIp: '203.0.113.7' })).toBe(true);
    expect(await recordPartnerSignInAddress(money.db, { partnerId: p.partnerId, clientIp: '::ffff:203.0.113.7' })).toBe(true);
    expect(await recordPartnerSignInAddress(money.db, { partnerId: p.partnerId, clientIp: '2001:db8:1:2::/64' })).toBe(true);
    expect(await recordPartnerSignInAddress(money.db, { partnerId: p.partnerId, clientIp: 'not an address' })).toBe(false);
    const rows = await money.db.many<{ client_ip: string; sign_ins: number }>(
      sql('t.sign_ins', `SELECT client_ip::text, sign_ins FROM partner_sign_in_addresses WHERE partner_id = $1 ORDER BY family(client_ip), client_ip`),
      [p.partnerId],
    );
    expect(rows).toEqual([
      { client_ip: '203.0.113.7/32', sign_ins: 2 },
      { client_ip: '2001:db8:1:2::/64', sign_ins: 1 },
    ]);
    expect(inetText('fe80::1%eth0')).toBe('fe80::1');
  });
});
