import { randomUUID } from 'node:crypto';
import { sql, type Database } from '../../core/db.js';
import { refused, type DomainError } from '../errors.js';
import { createBatchedStatement } from '../batched-statement.js';

export interface ClickInput {
  affCode: string;
  affiliateUrl: string;
  test: boolean;
  /** Origin of a browser call; checked against the program's allowed origins. */
  origin: string | undefined;
  /** sub1..sub5 of the affiliate_url (null when absent), at most 100 characters each (ingest/tracking/schemas.ts). */
  subs?: SubIds;
  /** The client's address as the click's rate limit counts it (an IPv6 client as its /64); null when it is not an address. */
  clientIp?: string | null;
}

/** A click's sub-ids, sub1 to sub5 in order. */
export type SubIds = readonly [string | null, string | null, string | null, string | null, string | null];

export interface RecordedClick {
  clickId: string;
  programId: number;
  cookieWindowDays: number;
}

interface ClickOutcomeRow {
  ord: number;
  link_id: number | null;
  enabled: boolean | null;
  program_id: number | null;
  partner_id: number | null;
  attribution_window_days: number | null;
  origin_allowed: boolean | null;
}

/*
 * One statement records a batch of clicks: it looks each link up and, for every click whose
 * conditions hold, inserts the click, its outbox event and (test clicks) the tracking-log entry.
 * One row per input comes back, in input order, saying which condition failed, if any. A
 * statement is atomic, so a batch commits whole or not at all.
 */
const recordClicksSql = sql(
  'clicks.record_batch',
  `WITH input AS (
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[],
                          $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::inet[])
              WITH ORDINALITY AS i (aff_code, click_id, affiliate_url, origin, test, sub1, sub2, sub3, sub4, sub5, client_ip, ord)
   ), link AS (
     SELECT i.ord, i.click_id, i.affiliate_url, i.test, i.sub1, i.sub2, i.sub3, i.sub4, i.sub5, i.client_ip,
            l.id AS link_id, l.enabled, l.program_id, l.partner_id,
            l.partner_program_id, p.attribution_window_days,
            (i.origin IS NULL OR i.origin = ANY (p.allowed_origins)) AS origin_allowed
       FROM input i
       LEFT JOIN referral_links l ON l.aff_code = i.aff_code
       LEFT JOIN programs p ON p.id = l.program_id
   ), click AS (
     INSERT INTO clicks (click_id, program_id, partner_id, partner_program_id, referral_link_id, affiliate_url, test,
                         sub1, sub2, sub3, sub4, sub5, client_ip)
     SELECT click_id, program_id, partner_id, partner_program_id, link_id, affiliate_url, test,
            sub1, sub2, sub3, sub4, sub5, client_ip
       FROM link
      WHERE enabled AND program_id IS NOT NULL AND partner_id IS NOT NULL AND attribution_window_days IS NOT NULL
        AND origin_allowed
     RETURNING click_id, program_id, partner_id, referral_link_id, test, created_at, sub1, sub2, sub3, sub4, sub5
   ), event AS (
     INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     SELECT 'click.recorded', click_id, program_id, test, created_at,
            jsonb_build_object('click_id', click_id, 'program_id', program_id, 'partner_id', partner_id,
                               'referral_link_id', referral_link_id, 'test', test, 'created_at', created_at,
                               'sub1', sub1, 'sub2', sub2, 'sub3', sub3, 'sub4', sub4, 'sub5', sub5)
       FROM click
   ), test_log AS (
     INSERT INTO tracking_logs (program_id, event_type, entity_id, created_at)
     SELECT program_id, 'click', click_id, created_at FROM click WHERE test
     RETURNING id, program_id, entity_id, created_at
   ), test_event AS (
     INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     SELECT 'test_event.logged', program_id::text, program_id, true, created_at,
            jsonb_build_object('tracking_log_id', id, 'program_id', program_id, 'event_type', 'click',
                               'entity_id', entity_id, 'created_at', created_at)
       FROM test_log
   )
   SELECT ord, link_id, enabled, program_id, partner_id, attribution_window_days, origin_allowed
     FROM link ORDER BY ord`,
);

function outcome(row: ClickOutcomeRow | undefined, clickId: string): RecordedClick {
  if (!row || row.link_id === null) throw refused({ reason: 'link_not_found' });
  if (row.program_id === null || row.partner_id === null || row.attribution_window_days === null) {
    throw refused({ reason: 'link_misconfigured' });
  }
  if (!row.enabled) throw refused({ reason: 'link_disabled' });
  if (!row.origin_allowed) throw refused({ reason: 'origin_not_allowed' });
  return { clickId, programId: row.program_id, cookieWindowDays: row.attribution_window_days };
}

export interface ClickWriter {
  /** Resolves once the click is committed (or rejects with the reason it was not recorded). */
  record(input: ClickInput): Promise<RecordedClick>;
}

export interface ClickWriterOptions {
  maxBatch?: number;
  /** Told of each click refused for its origin (by a program that exists), after its statement: the console lists them (issue 33). */
  onOriginRefused?: (programId: number, origin: string) => void;
}

/**
 * One at a time: the clicks that arrive while a statement runs all go into the next one, so each
 * statement's fixed cost is shared by as many clicks as possible. That cost is about 170 µs of a
 * PostgreSQL backend's CPU whatever the statement's size (about 65 µs of it system time: the
 * commit's WAL flush, the socket), against about 11 µs per click. Two in flight were right when a
 * flush took 2.5 to 3.3 ms: one statement ran while the other waited for its flush. With flushes
 * at 0.1 to 0.3 ms (2026-11-24), one in flight gave 0.33x and 0.34x of the bare route against
 * 0.30x and 0.31x with two, alternating, at 71 against 82 to 84 µs of CPU per click in all
 * (docs/performance.md, "One click statement in flight"). PGlite has one connection in any case.
 */
const CLICK_STATEMENTS_IN_FLIGHT = 1;

/** Clicks are the hottest path: written in batches (batched-statement.ts), one statement and one commit per batch. */
export function createClickWriter(db: Database, options: ClickWriterOptions = {}): ClickWriter {
  const record = createBatchedStatement<ClickInput & { clickId: string }, RecordedClick>(
    async (batch) => {
      const rows = await db.many<ClickOutcomeRow>(recordClicksSql, [
        batch.map((c) => c.affCode),
        batch.map((c) => c.clickId),
        batch.map((c) => c.affiliateUrl),
        batch.map((c) => c.origin ?? null),
        batch.map((c) => c.test),
        batch.map((c) => c.subs?.[0] ?? null),
        batch.map((c) => c.subs?.[1] ?? null),
        batch.map((c) => c.subs?.[2] ?? null),
        batch.map((c) => c.subs?.[3] ?? null),
        batch.map((c) => c.subs?.[4] ?? null),
        batch.map((c) => c.clientIp ?? null),
      ]);
      return batch.map((c, i) => {
        try {
          return { ok: true, value: outcome(rows[i], c.clickId) };
        } catch (error) {
          const row = rows[i];
          if (c.origin && (error as DomainError).refusal?.reason === 'origin_not_allowed') options.onOriginRefused?.(Number(row!.program_id), c.origin);
          return { ok: false, error };
        }
      });
    },
    { maxBatch: options.maxBatch ?? 500, maxInFlight: CLICK_STATEMENTS_IN_FLIGHT },
  );
  // Named fields, not a spread: with the spread this line was 2.5 % of the service's profile under
  // load, and without it the service spent 40.0 and 40.7 µs of CPU per click against 44.5 and 43.8
  // (bench/click-cpu.ts with BENCH_COMPARE, medians of three alternating rounds, twice).
  return {
    record: ({ affCode, affiliateUrl, test, origin, subs, clientIp }) => record({ affCode, affiliateUrl, test, origin, subs, clientIp, clickId: randomUUID() }),
  };
}
