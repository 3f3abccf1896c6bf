import { randomUUID } from 'node:crypto';
import { sql, type Database } from '../../core/db.js';
import { ApiError, badRequest, forbidden } from '../http/errors.js';
import { M } from '../http/messages.js';

export interface ClickInput {
  affCode: string;
  affiliateUrl: string;
  test: boolean;
  /** Origin of a browser call; checked against the program's allowed origins. */
  origin: string | undefined;
}

export interface RecordedClick {
  clickId: string;
  programId: number;
  cookieWindowDays: number;
}

interface ClickRow {
  link_id: number;
  enabled: boolean;
  program_id: number | null;
  partner_id: number | null;
  attribution_window_days: number | null;
  origin_allowed: boolean;
  click_id: string | null;
}

/*
 * One statement (hence one implicit transaction and one round trip) looks the link up and, when
 * every condition holds, inserts the click, its outbox event and, for a test click, the tracking
 * log entry. The row that comes back says which condition failed, if any.
 */
const recordClickSql = sql(
  'clicks.record',
  `WITH link AS (
     SELECT l.id AS link_id, l.enabled, l.program_id, l.partner_id, l.partner_program_id,
            p.attribution_window_days,
            ($4::text IS NULL OR $4 = ANY (p.allowed_origins)) AS origin_allowed
       FROM referral_links l LEFT JOIN programs p ON p.id = l.program_id
      WHERE l.aff_code = $1
   ), click AS (
     INSERT INTO clicks (click_id, program_id, partner_id, partner_program_id, referral_link_id, affiliate_url, test)
     SELECT $2, program_id, partner_id, partner_program_id, link_id, $3, $5
       FROM link
      WHERE enabled AND program_id IS NOT NULL AND partner_id IS NOT NULL AND attribution_window_days IS NOT NULL AND origin_allowed
     RETURNING click_id, program_id, partner_id, referral_link_id, test, created_at
   ), event AS (
     INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     SELECT 'click.recorded', click_id, program_id, test, created_at,
            jsonb_build_object('click_id', click_id, 'program_id', program_id, 'partner_id', partner_id,
                               'referral_link_id', referral_link_id, 'test', test, 'created_at', created_at)
       FROM click
   ), test_log AS (
     INSERT INTO tracking_logs (program_id, event_type, entity_id, created_at)
     SELECT program_id, 'click', click_id, created_at FROM click WHERE test
     RETURNING id, program_id, created_at
   ), test_event AS (
     INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     SELECT 'test_event.logged', program_id::text, program_id, true, created_at,
            jsonb_build_object('tracking_log_id', id, 'program_id', program_id, 'event_type', 'click',
                               'entity_id', $2::text, 'created_at', created_at)
       FROM test_log
   )
   SELECT link.link_id, link.enabled, link.program_id, link.partner_id, link.attribution_window_days,
          link.origin_allowed, (SELECT click_id FROM click) AS click_id
     FROM link`,
);

export async function recordClick(db: Database, input: ClickInput): Promise<RecordedClick> {
  const clickId = randomUUID();
  const row = await db.one<ClickRow>(recordClickSql, [input.affCode, clickId, input.affiliateUrl, input.origin ?? null, input.test]);
  if (!row) throw badRequest(M.click.linkNotFound);
  if (row.program_id === null || row.partner_id === null || row.attribution_window_days === null) {
    throw badRequest(M.click.linkMisconfigured);
  }
  if (!row.enabled) {
    throw new ApiError(410, M.click.linkDisabled, {
      envelope: 'typed',
      code: 'link_disabled',
      extra: { hint: M.click.linkDisabledHint },
      topLevel: { success: false, message: M.click.linkDisabled },
    });
  }
  if (!row.origin_allowed) throw forbidden(M.origin.notAllowed);
  return { clickId, programId: row.program_id, cookieWindowDays: row.attribution_window_days };
}
