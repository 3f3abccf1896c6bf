import { sql, type Database } from '../../core/db.js';
import type { ProgramKey } from './api-keys.js';
import { paymentsStep } from '../payments/payment-step.js';
import { processorConnection } from '../payments/connections.js';
import { blockedOrigins } from './blocked-origins.js';

/** Clicks refused for their origin this recently make the allowed_origins check fail (ours). */
const BLOCKED_ORIGINS_RECENT_MS = 7 * 24 * 3_600_000;

interface ReadinessRow {
  payment_tracking_mode: 'processor_connect' | 's2s';
  lead_auth: 'server_required' | 'browser_allowed';
  allowed_origins: number;
  approved_partners: number;
  enabled_links: number;
  test_clicks: number;
  test_leads: number;
  test_sales: number;
}

const collisions = sql(
  'readiness.transaction_id_collisions',
  `SELECT transaction_id, attempts, last_seen_at FROM transaction_id_collisions WHERE program_id = $1
    ORDER BY last_seen_at DESC, transaction_id LIMIT 10`,
);

const q = sql(
  'readiness.facts',
  `SELECT p.payment_tracking_mode, p.lead_auth, cardinality(p.allowed_origins) AS allowed_origins,
     (SELECT count(*) FROM partner_programs pp WHERE pp.program_id = p.id AND pp.status = 'approved') AS approved_partners,
     (SELECT count(*) FROM referral_links l WHERE l.program_id = p.id AND l.enabled AND l.partner_id IS NOT NULL) AS enabled_links,
     (SELECT count(*) FROM tracking_logs t WHERE t.program_id = p.id AND t.event_type = 'click') AS test_clicks,
     (SELECT count(*) FROM tracking_logs t WHERE t.program_id = p.id AND t.event_type = 'lead') AS test_leads,
     (SELECT count(*) FROM tracking_logs t WHERE t.program_id = p.id AND t.event_type = 'sale') AS test_sales
   FROM programs p WHERE p.id = $1`,
);

export interface ReadinessCheck {
  name: 'api_key' | 'partners' | 'referral_links' | 'allowed_origins' | 'test_click' | 'test_lead' | 'test_sale' | 'payment_tracking';
  ok: boolean;
  detail: string;
}

/** What a brand needs to know before going live, from the point of view of the calling key. */
export async function computeReadiness(db: Database, key: ProgramKey, now = new Date()) {
  const f = (await db.one<ReadinessRow>(q, [key.programId]))!;
  const collided = await db.many<{ transaction_id: string; attempts: number; last_seen_at: Date }>(collisions, [key.programId]);
  const connection = await processorConnection(db, key.programId);
  const blocked = (await blockedOrigins(db, key.programId)).filter((b) => now.getTime() - b.last_seen_at.getTime() < BLOCKED_ORIGINS_RECENT_MS);
  const payments = paymentsStep(f.payment_tracking_mode, connection);
  const marked = key.rotationDeadline !== null;
  const checks: ReadinessCheck[] = [
    {
      name: 'api_key',
      ok: !marked,
      detail: marked
        ? `The key is marked for rotation and stops working at ${key.rotationDeadline!.toISOString()}; regenerate it.`
        : 'The key is active.',
    },
    { name: 'partners', ok: f.approved_partners > 0, detail: `${f.approved_partners} approved partner(s).` },
    { name: 'referral_links', ok: f.enabled_links > 0, detail: `${f.enabled_links} enabled referral link(s).` },
    {
      name: 'allowed_origins',
      ok: blocked.length === 0,
      detail: blocked.length
        ? `Browser clicks were refused from origins that are not allowed: ${blocked.map((b) => b.origin).join(', ')}. Add them to the program's allowed origins if they are your sites.`
        : 'No browser click was refused for its origin in the last 7 days.',
    },
    { name: 'test_click', ok: f.test_clicks > 0, detail: f.test_clicks > 0 ? 'A test click was recorded.' : 'Send a click with additional_data.test_mode true.' },
    { name: 'test_lead', ok: f.test_leads > 0, detail: f.test_leads > 0 ? 'A test lead was recorded.' : 'Send a lead with additional_data.test_mode true.' },
    { name: 'test_sale', ok: f.test_sales > 0, detail: f.test_sales > 0 ? 'A test sale was recorded.' : 'Send a sale with additional_data.test_mode true.' },
    {
      name: 'payment_tracking',
      ok: payments.complete,
      detail:
        f.payment_tracking_mode === 's2s'
          ? 'Sales are reported server to server.'
          : payments.statistics.isProcessorConnected
            ? `Payments are recorded from the connected processor account ${payments.statistics.processorAccountId}.`
            : connection?.status === 'pending_verification'
              ? `The processor account ${connection.accountId} is waiting for its first signed event: point its webhook endpoint at /api/v1/webhooks/processor/${connection.accountId}.`
              : connection
              ? `The processor account ${connection.accountId} is ${connection.status}: connect it again from the program settings, or switch paymentTrackingMode to s2s.`
              : 'Payment tracking expects a processor connection, and none is connected yet; or switch paymentTrackingMode to s2s.',
    },
  ];
  return {
    program_id: key.programId,
    // Refused origins are reported, never counted against ready: anyone can send a click with a
    // made-up Origin, and a stranger must not be able to make a brand's program look broken.
    ready: checks.every((c) => c.ok || c.name === 'allowed_origins'),
    api_key: { state: marked ? ('marked_for_rotation' as const) : ('active' as const), rotate_by: key.rotationDeadline?.toISOString() ?? null },
    payment_tracking_mode: f.payment_tracking_mode,
    lead_auth: f.lead_auth,
    allowed_origins_count: f.allowed_origins,
    partners: { approved: f.approved_partners },
    referral_links: { enabled: f.enabled_links },
    test_events: { click: f.test_clicks, lead: f.test_leads, sale: f.test_sales },
    checks,
    // Real sales of this program refused with 409 because another program had recorded the same
    // transaction_id first: they were not recorded here (issue 15). Newest first, at most 10.
    transaction_id_collisions: collided.map((c) => ({ transaction_id: c.transaction_id, attempts: c.attempts, last_seen_at: c.last_seen_at.toISOString() })),
    // Origins whose browser clicks were refused in the last 7 days and that are still not allowed (issue 33).
    blocked_origins: blocked.map((b) => ({ origin: b.origin, attempts: b.attempts, last_seen_at: b.last_seen_at.toISOString() })),
    checked_at: now.toISOString(),
  };
}
