import { sql, type Database } from '../../core/db.js';
import { paymentsStep, type ProcessorConnection } from '../payments/payment-step.js';
import { processorConnection } from '../payments/connections.js';
import type { PaymentTrackingMode } from './programs.js';

/** The status endpoint counts test events up to this many per step (spec "Limits"). */
const TEST_EVENT_COUNT_CAP = 10;

const q = {
  // One round trip; every count reads at most the cap from the (program_id, event_type, created_at) index.
  integration: sql(
    'dashboard.integration_facts',
    `SELECT p.payment_tracking_mode AS "paymentTrackingMode",
            EXISTS (SELECT 1 FROM partner_programs pp WHERE pp.program_id = p.id AND pp.status = 'approved') AS "hasPartners",
            (SELECT count(*) FROM (SELECT 1 FROM tracking_logs t
                                    WHERE t.program_id = p.id AND t.event_type = 'click' LIMIT $2) c) AS "clickCount",
            (SELECT count(*) FROM (SELECT 1 FROM tracking_logs t
                                    WHERE t.program_id = p.id AND t.event_type = 'lead' LIMIT $2) l) AS "leadCount",
            lc.id AS "latestClickId", lc.created_at AS "latestClickAt",
            ll.id AS "latestLeadId", ll.created_at AS "latestLeadAt"
       FROM programs p
       LEFT JOIN LATERAL (SELECT id, created_at FROM tracking_logs t WHERE t.program_id = p.id AND t.event_type = 'click'
                           ORDER BY created_at DESC, id DESC LIMIT 1) lc ON true
       LEFT JOIN LATERAL (SELECT id, created_at FROM tracking_logs t WHERE t.program_id = p.id AND t.event_type = 'lead'
                           ORDER BY created_at DESC, id DESC LIMIT 1) ll ON true
      WHERE p.id = $1`,
  ),
};

export interface TestEventSummary {
  /** Up to TEST_EVENT_COUNT_CAP. */
  count: number;
  latest: { id: number; createdAt: Date } | null;
}

export interface IntegrationFacts {
  paymentTrackingMode: PaymentTrackingMode;
  /** The program's processor connection; null when none was made. */
  processorConnection: ProcessorConnection | null;
  hasPartners: boolean;
  pageview: TestEventSummary;
  referrals: TestEventSummary;
}

interface IntegrationRow {
  paymentTrackingMode: PaymentTrackingMode;
  hasPartners: boolean;
  clickCount: number;
  leadCount: number;
  latestClickId: number | null;
  latestClickAt: Date | null;
  latestLeadId: number | null;
  latestLeadAt: Date | null;
}

/**
 * What the integration checklist is made of, read from Postgres (the system of record): test
 * click and lead entries of the tracking log, the payment tracking mode, approved partners. A
 * brand checks the list right after sending a test event, so it must see its own write at once;
 * the warehouse copy (test_event_logged) trails by the relay's delay. Undefined for an unknown program.
 */
export async function integrationFacts(db: Database, programId: number): Promise<IntegrationFacts | undefined> {
  const row = await db.one<IntegrationRow>(q.integration, [programId, TEST_EVENT_COUNT_CAP]);
  if (!row) return undefined;
  const summary = (count: number, id: number | null, at: Date | null): TestEventSummary => ({
    count: Number(count),
    latest: id === null || at === null ? null : { id: Number(id), createdAt: at },
  });
  return {
    paymentTrackingMode: row.paymentTrackingMode,
    processorConnection: await processorConnection(db, programId),
    hasPartners: row.hasPartners,
    pageview: summary(row.clickCount, row.latestClickId, row.latestClickAt),
    referrals: summary(row.leadCount, row.latestLeadId, row.latestLeadAt),
  };
}

/** The body of GET /api/tracking/status/:programId (and of the CLI's GET /status). */
export function integrationStatus(programId: number, facts: IntegrationFacts, now: Date) {
  const payments = paymentsStep(facts.paymentTrackingMode, facts.processorConnection);
  const statistics = (s: TestEventSummary) => ({
    testEventCount: Math.min(s.count, TEST_EVENT_COUNT_CAP),
    hasTestEvents: s.count > 0,
    latestTestEvent: s.latest && {
      id: s.latest.id,
      timestamp: s.latest.createdAt.toISOString(),
      createdAt: s.latest.createdAt.toISOString(),
    },
  });
  const step = (complete: boolean) => (complete ? ('complete' as const) : ('pending' as const));
  return {
    programId: String(programId),
    stepStatuses: {
      pageview: step(facts.pageview.count > 0),
      referrals: step(facts.referrals.count > 0),
      payments: step(payments.complete),
    },
    statistics: {
      pageview: statistics(facts.pageview),
      referrals: statistics(facts.referrals),
      payments: payments.statistics,
    },
    hasPartners: facts.hasPartners,
    lastUpdated: now.toISOString(),
  };
}
