/**
 * The events a run carries: real traffic over HTTP (buildApp + inject: clicks, leads, sales,
 * refunds, so every event type), then the outbox multiplied in SQL to BENCH_EVENTS events (each
 * clone a distinct event_id; click clones a distinct click_id).
 */
import { sql, type Database } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { addMember, createWorkspace } from '../../domain/access/workspaces.js';
import { buildApp } from '../../ingest/app.js';
import { memoryRateLimitStore } from '../../ingest/http/rate-limit.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import type { LogMessage } from '../../processors/event-log/event-log.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import type { OutboxRow } from '../../schemas/event-contract.js';
import { clientIps } from '../client-ips.js';
import { fmtFinite as fmt, log } from '../output.js';
import { seedProgram, type SeededProgram } from '../setup.js';
import { vacuumOutbox } from './drain.js';

const q = {
  maxId: sql('bench.pipeline_max_id', `SELECT coalesce(max(id), 0)::int AS n FROM outbox`),
  byType: sql('bench.pipeline_by_type', `SELECT event_type, count(*)::int AS n FROM outbox GROUP BY 1 ORDER BY 1`),
  /*
   * Clones of the real events, interleaved like traffic: copy 1 of every event, then copy 2...
   * Each clone gets a fresh event_id (the column default); a click clone also a fresh click_id,
   * used as its key, so the warehouse holds distinct clicks. The subquery is ordered and limited,
   * so it is evaluated once and gen_random_uuid() runs once per clone.
   */
  multiply: sql(
    'bench.pipeline_multiply',
    `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     SELECT event_type,
            CASE WHEN event_type = 'click.recorded' THEN new_click ELSE aggregate_key END,
            program_id, test, occurred_at,
            CASE WHEN event_type = 'click.recorded' THEN payload || jsonb_build_object('click_id', new_click) ELSE payload END
       FROM (SELECT o.event_type, o.aggregate_key, o.program_id, o.test, o.occurred_at, o.payload, gen_random_uuid()::text AS new_click
               FROM outbox o CROSS JOIN generate_series(1, $1::int) AS g (copy)
              WHERE o.id <= $2
              ORDER BY g.copy, o.id
              LIMIT $3) AS clone`,
  ),
  page: sql(
    'bench.pipeline_page',
    `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
       FROM outbox WHERE id > $1 ORDER BY id LIMIT $2`,
  ),
};

/** A workspace with three programs (the second with recurring commissions); aff codes carry the run id. */
export async function seedPrograms(db: Database, runId: string): Promise<SeededProgram[]> {
  const workspaceId = await createWorkspace(db, 'Bench workspace');
  await addMember(db, workspaceId, 'owner@bench.example', 'owner', 'Bench owner');
  const programs: SeededProgram[] = [];
  for (const label of ['a', 'b', 'c']) {
    programs.push(await seedProgram(db, workspaceId, label, { commissionType: label === 'b' ? 'recurring_percent' : 'percent', affCode: `bench-${label}-${runId}` }));
  }
  return programs;
}

/**
 * Customer journeys per program, over HTTP through the real routes: a click (every 7th in test
 * mode), a lead, a sale, a recurring second sale for every 4th, a refund or chargeback for every
 * 3rd. That yields every event type. Sales and refunds stay under the 120 per key per minute.
 */
async function sendJourneys(db: Database, programs: SeededProgram[], perProgram: number, runId: string): Promise<void> {
  const app = await buildApp({
    db,
    rateLimits: memoryRateLimitStore(),
    logger: createLogger('silent'),
    trustProxy: ['127.0.0.1'],
    tracking: { platformFeeBps: 2_000, docsBaseUrl: 'https://docs.bench.example' },
  });
  const ips = clientIps();
  try {
    const post = async (url: string, payload: object, key?: string) => {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { 'x-forwarded-for': ips.next(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
        payload,
      });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
      return res.json() as Record<string, unknown>;
    };
    const journey = async (program: SeededProgram, i: number) => {
      const click = await post('/api/v1/track/click', { affiliate_url: `https://shop.bench.example/?aff=${program.affCode}`, additional_data: { test_mode: i % 7 === 6 } });
      const customer = `bench-${runId}-${program.programId}-${i}`;
      await post('/api/v1/track/lead', { click_id: click.click_id, customer_key: customer }, program.apiKey);
      await post('/api/v1/track/sale', { transaction_id: customer, amount_cents: 1_000 + i, customer_key: customer }, program.apiKey);
      if (i % 4 === 0) {
        await post('/api/v1/track/sale', { transaction_id: `${customer}-r`, amount_cents: 500 + i, customer_key: customer, is_recurring: true }, program.apiKey);
      }
      if (i % 3 === 0) await post('/api/v1/track/refund', { transaction_id: customer, reason: i % 2 ? 'refund' : 'chargeback' }, program.apiKey);
    };
    const work = programs.flatMap((program) => Array.from({ length: perProgram }, (_, i) => () => journey(program, i)));
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < work.length) await work[next++]!();
      }),
    );
  } finally {
    await app.close();
  }
}

/** Outbox rows per event type. */
async function eventsByType(db: Database): Promise<Map<string, number>> {
  return new Map((await db.many<{ event_type: string; n: number }>(q.byType)).map((r) => [r.event_type, r.n]));
}

/** Real traffic, multiplied to `events` outbox rows; the count per event type. */
export async function fillOutbox(db: Database, programs: SeededProgram[], events: number, runId: string): Promise<Map<string, number>> {
  const t0 = performance.now();
  await sendJourneys(db, programs, 40, runId);
  const real = (await db.one<{ n: number }>(q.maxId))!.n;
  const copies = Math.ceil(events / real);
  await db.many(q.multiply, [copies, real, Math.max(0, events - real)]);
  await vacuumOutbox(db);
  const outbox = await eventsByType(db);
  const total = [...outbox.values()].reduce((a, b) => a + b, 0);
  log(`outbox: ${fmt(real)} events from HTTP traffic, multiplied to ${fmt(total)} in ${fmt((performance.now() - t0) / 1000, 1)} s: ` +
    [...outbox].map(([t, n]) => `${t} ${fmt((n / total) * 100, 1)} %`).join(', '));
  return outbox;
}

/** The outbox's rows as the relay would publish them, into the topics of `topicPrefix`. */
export async function encodedOutbox(db: Database, topicPrefix: string): Promise<LogMessage[]> {
  const codec = createAvroCodec();
  const topics = topicsOf(codec, topicPrefix);
  const messages: LogMessage[] = [];
  let after = 0;
  for (;;) {
    const rows = await db.many<OutboxRow>(q.page, [after, 10_000]);
    if (rows.length === 0) return messages;
    for (const row of rows) {
      const m = codec.message(row);
      messages.push({ ...m, topic: topics.name(m.topic) });
    }
    after = Number(rows[rows.length - 1]!.id);
  }
}
