import { randomBytes, randomUUID } from 'node:crypto';
import { sql, type Database, type Transaction } from '../../core/db.js';
import type { ClickWriter } from './clicks.js';
import { refused } from '../errors.js';
import { recordLead } from './leads.js';
import { recordSale } from './sales.js';

/** Spec "Limits": 10 synthetic chains per program per hour. */
const CHAINS_PER_HOUR = 10;
const HOUR_MS = 3_600_000;
/** What a synthetic sale is worth (ours): visible in status, never paid (test mode creates no commission). */
const TEST_SALE_CENTS = 4_900;

export type SyntheticEventType = 'click' | 'lead' | 'sale';

const q = {
  // Serializes fixture refreshes and chain counting per program without blocking inserts that
  // reference the program (NO KEY UPDATE does not conflict with foreign-key checks).
  lockProgram: sql('cli_test.lock_program', `SELECT domain FROM programs WHERE id = $1 FOR NO KEY UPDATE`),
  fixture: sql(
    'cli_test.fixture',
    `SELECT f.partner_id AS "partnerId", f.partner_program_id AS "partnerProgramId", f.referral_link_id AS "linkId", l.aff_code AS "affCode"
       FROM cli_test_fixtures f JOIN referral_links l ON l.id = f.referral_link_id
      WHERE f.program_id = $1`,
  ),
  partner: sql('cli_test.partner', `INSERT INTO partners (name) VALUES ('svc CLI test partner') RETURNING id`),
  // Pending, so the fixture never counts as an approved partner (status, readiness).
  junction: sql(
    'cli_test.junction',
    `INSERT INTO partner_programs (partner_id, program_id, status) VALUES ($1, $2, 'pending') RETURNING id`,
  ),
  link: sql(
    'cli_test.link',
    `INSERT INTO referral_links (aff_code, program_id, partner_id, partner_program_id) VALUES ($1, $2, $3, $4) RETURNING id`,
  ),
  insertFixture: sql(
    'cli_test.insert_fixture',
    `INSERT INTO cli_test_fixtures (program_id, partner_id, partner_program_id, referral_link_id) VALUES ($1, $2, $3, $4)
     RETURNING refreshed_at AS "refreshedAt"`,
  ),
  // Refreshing undoes what a person may have changed on the fixture's link since the last run.
  refreshLink: sql(
    'cli_test.refresh_link',
    `UPDATE referral_links SET enabled = true, program_id = $2, partner_id = $3, partner_program_id = $4, updated_at = now()
      WHERE id = $1`,
  ),
  touchFixture: sql(
    'cli_test.touch_fixture',
    `UPDATE cli_test_fixtures SET refreshed_at = now() WHERE program_id = $1 RETURNING refreshed_at AS "refreshedAt"`,
  ),
  recentChains: sql(
    'cli_test.recent_chains',
    `SELECT count(*)::int AS count, min(created_at) AS oldest, now() AS now
       FROM cli_test_chain_runs WHERE program_id = $1 AND created_at > now() - interval '1 hour'`,
  ),
  insertChain: sql('cli_test.insert_chain', `INSERT INTO cli_test_chain_runs (program_id) VALUES ($1)`),
};

export interface TestFixtures {
  partnerId: number;
  affCode: string;
  affiliateUrl: string;
  created: boolean;
  refreshedAt: Date;
}

function affiliateUrl(domain: string, affCode: string): string {
  try {
    const url = new URL(/^https?:\/\//.test(domain) ? domain : `https://${domain}`);
    url.searchParams.set('aff', affCode);
    return url.toString();
  } catch {
    return `https://example.invalid/?aff=${encodeURIComponent(affCode)}`;
  }
}

async function ensureFixtures(tx: Transaction, programId: number): Promise<TestFixtures> {
  const program = await tx.one<{ domain: string }>(q.lockProgram, [programId]);
  if (!program) throw new Error(`program ${programId} vanished while its key was in use`);
  const existing = await tx.one<{ partnerId: number; partnerProgramId: number; linkId: number; affCode: string }>(q.fixture, [programId]);
  if (existing) {
    await tx.many(q.refreshLink, [existing.linkId, programId, existing.partnerId, existing.partnerProgramId]);
    const { refreshedAt } = (await tx.one<{ refreshedAt: Date }>(q.touchFixture, [programId]))!;
    return { partnerId: Number(existing.partnerId), affCode: existing.affCode, affiliateUrl: affiliateUrl(program.domain, existing.affCode), created: false, refreshedAt };
  }
  const partnerId = (await tx.one<{ id: number }>(q.partner))!.id;
  const junctionId = (await tx.one<{ id: number }>(q.junction, [partnerId, programId]))!.id;
  const affCode = `svc-test-${randomBytes(6).toString('hex')}`;
  const linkId = (await tx.one<{ id: number }>(q.link, [affCode, programId, partnerId, junctionId]))!.id;
  const { refreshedAt } = (await tx.one<{ refreshedAt: Date }>(q.insertFixture, [programId, partnerId, junctionId, linkId]))!;
  return { partnerId: Number(partnerId), affCode, affiliateUrl: affiliateUrl(program.domain, affCode), created: true, refreshedAt };
}

/** The test partner and referral link synthetic events run on: created on first use, refreshed on each. */
const refreshTestFixtures = (db: Database, programId: number) => db.transaction((tx) => ensureFixtures(tx, programId));

export interface SyntheticDeps {
  db: Database;
  clicks: ClickWriter;
  platformFeeBps: number;
}

export type SyntheticEvent =
  | { event_type: 'click'; click_id: string }
  | { event_type: 'lead'; click_id: string; customer_id: number; customer_key: string; status: string }
  | { event_type: 'sale'; sale_id: string; transaction_id: string; amount_cents: number; currency: string };

async function testClick(deps: SyntheticDeps, fixtures: TestFixtures) {
  const click = await deps.clicks.record({ affCode: fixtures.affCode, affiliateUrl: fixtures.affiliateUrl, test: true, origin: undefined });
  return { event_type: 'click' as const, click_id: click.clickId };
}

async function testLead(deps: SyntheticDeps, programId: number, clickId: string) {
  const customerKey = `svc_test_${randomUUID()}`;
  const lead = await recordLead(deps.db, { clickId, customerKey, email: undefined, test: true, keyProgramId: programId, origin: undefined });
  return { event_type: 'lead' as const, click_id: clickId, customer_id: Number(lead.customerId), customer_key: customerKey, status: lead.status };
}

async function testSale(deps: SyntheticDeps, programId: number, customerKey: string | undefined) {
  const outcome = await recordSale(
    deps.db,
    {
      programId,
      transactionId: `test_txn_svc_${randomUUID()}`,
      amountCents: TEST_SALE_CENTS,
      customerKey,
      clickId: undefined,
      currency: 'USD',
      occurredAt: undefined,
      provider: 'other',
      providerPaymentId: undefined,
      livemode: false,
      isRecurring: false,
      saleType: undefined,
      subscriptionId: undefined,
      test: true,
    },
    deps.platformFeeBps,
  );
  const { sale } = outcome;
  return { event_type: 'sale' as const, sale_id: sale.id, transaction_id: sale.transaction_id, amount_cents: Number(sale.amount_cents), currency: sale.currency };
}

/**
 * One synthetic event in test mode, as the tracking API would record it: a click on the fixture
 * link; a lead (on a new test click, which a lead needs); a test sale.
 */
export async function runTestEvent(deps: SyntheticDeps, programId: number, type: SyntheticEventType): Promise<{ event: SyntheticEvent; fixtures: TestFixtures | null }> {
  if (type === 'sale') return { event: await testSale(deps, programId, undefined), fixtures: null };
  const fixtures = await refreshTestFixtures(deps.db, programId);
  const click = await testClick(deps, fixtures);
  if (type === 'click') return { event: click, fixtures };
  return { event: await testLead(deps, programId, click.click_id), fixtures };
}

export interface ChainResult {
  fixtures: TestFixtures;
  steps: [Extract<SyntheticEvent, { event_type: 'click' }>, Extract<SyntheticEvent, { event_type: 'lead' }>, Extract<SyntheticEvent, { event_type: 'sale' }>];
  chainsLeftThisHour: number;
}

/**
 * The synthetic verification chain: click, lead and sale in test mode on the fixtures. The
 * fixtures are refreshed first, then the hourly cap is checked inside the same transaction that
 * counts this run (spec: the cap is checked inside the endpoint, after the fixtures).
 */
export async function runTestChain(deps: SyntheticDeps, programId: number): Promise<ChainResult> {
  // The refresh commits even when the cap refuses the run.
  const counted = await deps.db.transaction(async (tx) => {
    const fixtures = await ensureFixtures(tx, programId);
    const recent = (await tx.one<{ count: number; oldest: Date | null; now: Date }>(q.recentChains, [programId]))!;
    if (recent.count >= CHAINS_PER_HOUR) {
      return { limited: true as const, retryAfterSeconds: chainRetryAfterSeconds(recent.oldest ?? recent.now, recent.now) };
    }
    await tx.many(q.insertChain, [programId]);
    return { limited: false as const, fixtures, chainsLeftThisHour: CHAINS_PER_HOUR - recent.count - 1 };
  });
  if (counted.limited) throw refused({ reason: 'chain_rate_limited', retryAfterSeconds: counted.retryAfterSeconds });
  const { fixtures } = counted;
  const click = await testClick(deps, fixtures);
  const lead = await testLead(deps, programId, click.click_id);
  const sale = await testSale(deps, programId, lead.customer_key);
  return { fixtures, steps: [click, lead, sale], chainsLeftThisHour: counted.chainsLeftThisHour };
}

/** Seconds until the oldest run of the last hour leaves the window. */
const chainRetryAfterSeconds = (oldest: Date, now: Date) => Math.max(1, Math.ceil((oldest.getTime() + HOUR_MS - now.getTime()) / 1000));
