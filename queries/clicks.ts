/**
 * A program's clicks, a page at a time, for the agent API (issue 13). Read from the warehouse:
 * Postgres keeps no (program_id, created_at) index on clicks on purpose (it cost about 15 % of click
 * writes, schemas/postgres/0003), while click_recorded is sorted by program and day.
 */
import { sql } from '../core/sql.js';
import type { Warehouse } from '../core/warehouse.js';

export interface ClickPageRequest {
  programId: number;
  /** ISO 8601 instants; from inclusive, to exclusive. */
  from?: string;
  to?: string;
  partnerId?: number;
  /** `real` or `test` clicks only. */
  kind?: 'real' | 'test';
  /** The position after which the page starts: the click's time as the warehouse prints it, and its id. */
  after?: { at: string; id: string };
  limit: number;
}

export interface ClickRow {
  click_id: string;
  partner_id: number | null;
  referral_link_id: number;
  test: boolean;
  created_at: string;
}

const EARLIEST = '1970-01-01 00:00:00.000000';
const LATEST = '2299-12-31 00:00:00.000000';

// FINAL: a redelivered click is one row. The tuple comparison resumes after the cursor's click.
const clicksPageSql = sql(
  'agent.clicks_page',
  `SELECT click_id, partner_id, referral_link_id, test, toString(occurred_at) AS at
     FROM click_recorded FINAL
    WHERE program_id = {programId:Int64}
      AND occurred_at >= toDateTime64({from:String}, 6, 'UTC') AND occurred_at < toDateTime64({to:String}, 6, 'UTC')
      AND ({partnerId:Int64} = 0 OR partner_id = {partnerId:Int64})
      AND ({kind:String} = '' OR test = ({kind:String} = 'test'))
      AND (occurred_at, click_id) > (toDateTime64({afterAt:String}, 6, 'UTC'), {afterId:String})
    ORDER BY occurred_at, click_id
    LIMIT {limit:UInt32}`,
);

/** An ISO 8601 instant as the warehouse reads it: UTC, space-separated, microseconds. */
const warehouseTime = (iso: string) => new Date(iso).toISOString().replace('T', ' ').replace('Z', '000');

export async function clicksPage(warehouse: Warehouse, r: ClickPageRequest) {
  const rows = await warehouse.query<{ click_id: string; partner_id: number | null; referral_link_id: number; test: boolean | number; at: string }>(
    clicksPageSql,
    {
      programId: r.programId,
      from: r.from ? warehouseTime(r.from) : EARLIEST,
      to: r.to ? warehouseTime(r.to) : LATEST,
      partnerId: r.partnerId ?? 0,
      kind: r.kind ?? '',
      afterAt: r.after?.at ?? EARLIEST,
      afterId: r.after?.id ?? '',
      limit: r.limit + 1,
    },
  );
  const more = rows.length > r.limit;
  const kept = more ? rows.slice(0, r.limit) : rows;
  const items: ClickRow[] = kept.map((row) => ({
    click_id: row.click_id,
    partner_id: row.partner_id === null ? null : Number(row.partner_id),
    referral_link_id: Number(row.referral_link_id),
    test: Boolean(row.test),
    created_at: `${row.at.replace(' ', 'T')}Z`,
  }));
  const last = kept.at(-1);
  return { items, next: more && last ? { at: last.at, id: last.click_id } : undefined };
}
