import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { sql, type Database } from '../../core/db.js';
import type { Warehouse } from '../../core/warehouse.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { DEAD_LETTER_TOPIC } from '../../processors/embedded-pipeline.js';
import type { EventLog } from '../../processors/event-log/event-log.js';
import { createLoader } from '../../processors/loader/loader.js';
import { createLoadingLog } from '../../processors/loader/loading-log.js';
import { createRelay, type RelayResult } from '../../processors/relay.js';
import { createTestProgram, freshIp, type TestProgram } from './app.js';
import { charge, checkoutSession, deliver as deliverProcessorEvent, event } from './processor.js';
import { referencePerformance, type DashboardQuery } from './oracle-reference.js';

/**
 * The dashboard oracle: random histories are driven over HTTP, delivered from the outbox to the
 * warehouse by a delivery step given by the caller (the embedded relay and loader here, a real
 * Kafka broker later), and every performance response the service computes from the warehouse must
 * equal the one computed from the Postgres state by the reference implementation.
 */

/** Moves everything committed in the outbox into the warehouse; resolves once it is loaded. */
export type Deliver = (db: Database) => Promise<void>;

/**
 * The embedded path: relay, in-process loading log, loader and Avro codec, as `npm start` runs
 * them. With `redeliverySeed`, random slices of published batches are published again (new
 * offsets, so new insert tokens): the at-least-once redelivery of a restarted consumer, which
 * only FINAL and distinct counts keep from counting twice.
 */
export function embeddedDelivery(warehouse: Warehouse, options: { redeliverySeed?: number } = {}): Deliver {
  const codec = createAvroCodec();
  const deadLetters: string[] = [];
  const loading = createLoadingLog({
    loader: createLoader({ warehouse, decode: codec.decode }),
    deadLetterTopic: DEAD_LETTER_TOPIC,
    reportDeadLetter: (_topic, reason) => deadLetters.push(reason),
  });
  const rng = options.redeliverySeed === undefined ? undefined : seededRandom(options.redeliverySeed);
  const log: EventLog = {
    async publish(messages) {
      await loading.publish(messages);
      if (rng && messages.length > 0 && rng.chance(0.5)) {
        const start = rng.int(0, messages.length - 1);
        await loading.publish(messages.slice(start, rng.int(start, messages.length - 1) + 1));
      }
    },
    close: () => loading.close(),
  };
  return async (db) => {
    await relayEverything(db, createRelay({ db, log, encode: codec.message, deadLetterTopic: DEAD_LETTER_TOPIC, batchSize: 20 }));
    if (deadLetters.length > 0) throw new Error(`dead letters: ${deadLetters.join('; ')}`);
  };
}

const unrelayed = sql('t.oracle_unrelayed', `SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL`);

/**
 * Relays until every committed outbox row is published. The relay holds back rows newer than the
 * oldest transaction running anywhere on the server, and other test files run transactions on the
 * same server, so an idle round is not yet the end: wait until none is left.
 */
export async function relayEverything(db: Database, relay: Pick<ReturnType<typeof createRelay>, 'relayOnce'>, onRound: (result: RelayResult) => void = () => {}): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await relay.relayOnce();
    if (result.kind === 'retry') throw result.error;
    onRound(result);
    if (result.kind === 'ok') continue;
    if (((await db.one<{ n: number }>(unrelayed))?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error('outbox rows still unrelayed after 30 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** mulberry32: a small seeded generator, so a failing history can be replayed from its seed. */
export function seededRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}
export type Random = ReturnType<typeof seededRandom>;

const DAY_MS = 86_400_000;

/*
 * Clicks are stamped by Postgres (now()), so a history made over HTTP happens "today". To put a
 * click days in the past (and so outside a program's attribution window), its row and its
 * not-yet-relayed click.recorded event are moved back together, as if the click had been recorded then.
 */
const ageClickSql = sql(
  'oracle.age_click',
  `WITH click AS (
     UPDATE clicks SET created_at = created_at - make_interval(days => $2) WHERE click_id = $1 RETURNING created_at
   )
   UPDATE outbox o SET occurred_at = click.created_at,
          payload = jsonb_set(o.payload, '{created_at}', to_jsonb(click.created_at))
     FROM click
    WHERE o.event_type = 'click.recorded' AND o.aggregate_key = $1 AND o.relayed_at IS NULL
   RETURNING o.id`,
);

export interface OracleOptions {
  app: FastifyInstance;
  db: Database;
  deliver: Deliver;
  /** Sets the dashboard's clock (undefined: the real time). */
  setNow(ms: number | undefined): void;
  seed: number;
  histories: number;
  /** Steps per history (each one HTTP call, some refused by the service, as real traffic is). */
  steps: number;
}

interface History {
  program: TestProgram;
  steps: string[];
}

/** One random history on a new program, driven over HTTP; the outbox is delivered at random points. */
async function driveHistory(o: OracleOptions, rng: Random, tag: string): Promise<History> {
  const commissionType = rng.pick(['percent', 'fixed', 'recurring_percent', 'recurring_fixed'] as const);
  const program = await createTestProgram(o.app, o.db, {
    commission_type: commissionType,
    commission_rate: commissionType.endsWith('percent') ? rng.int(1, 40) : rng.int(1, 25),
    attribution_window_days: rng.pick([3, 30, 60]),
    lead_auth: rng.chance(0.7) ? 'server_required' : 'browser_allowed',
  });
  const owner = { authorization: `Bearer ${program.workspace.ownerToken}` };
  const key = { authorization: `Bearer ${program.apiKey}` };
  const affCodes = [program.affCode];
  const clicks: string[] = [];
  /** Clicks with no customer yet, and clicks whose customer is a provisional (browser-mode) lead. */
  const fresh = new Set<string>();
  const provisional: string[] = [];
  const customerKeys: string[] = [];
  const transactions: string[] = [];
  /** Payments recorded from processor events, with the charge's refunded total so far. */
  const processorPayments: { pi: string; charge: string; amount: number; refunded: number }[] = [];
  const log: string[] = [];
  const post = (url: string, payload: object, headers: Record<string, string> = {}) =>
    o.app.inject({ method: 'POST', url, headers: { 'x-forwarded-for': freshIp(), ...headers }, payload });

  for (let i = 0; i < o.steps; i++) {
    const roll = rng.next();
    if (roll < 0.06) {
      const res = await post(`/api/tracking/programs/${program.programId}/partners`, { name: `Partner ${tag}-${i}` }, owner);
      if (res.statusCode === 200) affCodes.push(res.json().data.aff_code);
      log.push(`partner ${res.statusCode}`);
    } else if (roll < 0.36 || clicks.length === 0) {
      const test = rng.chance(0.15);
      const res = await post('/api/v1/track/click', {
        affiliate_url: `https://shop.test.example/?aff=${rng.pick(affCodes)}`,
        ...(test ? { additional_data: { test_mode: true } } : {}),
      });
      const clickId = res.json().click_id as string;
      let age = 0;
      if (!test && rng.chance(0.35)) {
        age = rng.int(1, 75);
        const moved = await o.db.many(ageClickSql, [clickId, age]);
        if (moved.length !== 1) throw new Error(`click ${clickId} was relayed before it could be aged`);
      }
      clicks.push(clickId);
      fresh.add(clickId);
      log.push(`click${test ? ' test' : ''}${age ? ` aged ${age}d` : ''} ${res.statusCode}`);
    } else if (roll < 0.56) {
      const server = rng.chance(0.55);
      // Mostly signups of new visitors; some server leads settle a provisional lead; some repeat.
      const clickId =
        server && provisional.length > 0 && rng.chance(0.4)
          ? rng.pick(provisional)
          : fresh.size > 0 && rng.chance(0.75)
            ? rng.pick([...fresh])
            : rng.pick(clicks);
      const customerKey = `ck-${tag}-${i}`;
      const test = rng.chance(0.1);
      const res = await post(
        '/api/v1/track/lead',
        { click_id: clickId, ...(server ? { customer_key: customerKey } : {}), ...(test ? { additional_data: { test_mode: true } } : {}) },
        server ? key : {},
      );
      if (server && res.statusCode === 200) customerKeys.push(customerKey);
      if (res.statusCode === 200) fresh.delete(clickId);
      if (res.statusCode === 200 && res.json().data.provisional) provisional.push(clickId);
      log.push(`lead ${server ? 'server' : 'browser'}${test ? ' test' : ''} ${res.statusCode}${res.json().data?.provisional ? ' provisional' : ''}`);
    } else if (roll < 0.84 && rng.chance(0.2)) {
      // A payment through the processor (a one-off checkout for a click), which it may refund in parts.
      const amount = rng.int(100, 50_000);
      const pi = `pi_${tag}_${i}`;
      const session = checkoutSession({
        id: `cs_${tag}_${i}`, payment_intent: pi, amount_total: amount, currency: rng.chance(0.8) ? 'usd' : 'eur',
        metadata: { program_id: String(program.programId), svc_click_id: rng.pick(clicks) },
      });
      const res = await deliverProcessorEvent(o.app, event('checkout.session.completed', session));
      if (res.json().data?.outcome === 'recorded') processorPayments.push({ pi, charge: `ch_${tag}_${i}`, amount, refunded: 0 });
      log.push(`processor sale ${res.statusCode} ${res.json().data?.outcome}`);
    } else if (roll < 0.84) {
      const test = rng.chance(0.1);
      const transactionId = `tx-${tag}-${i}`;
      const byKey = customerKeys.length > 0 && rng.chance(0.4);
      const backDays = rng.chance(0.6) ? rng.next() * 29.5 : null;
      const saleClick = rng.pick(clicks);
      const payload = test
        ? { transaction_id: transactionId, amount_cents: rng.int(100, 50_000), additional_data: { test_mode: true } }
        : {
            transaction_id: transactionId,
            amount_cents: rng.int(50, 250_000),
            ...(byKey ? { customer_key: rng.pick(customerKeys) } : { click_id: saleClick }),
            currency: rng.chance(0.75) ? 'USD' : rng.pick(['EUR', 'VND', 'usd']),
            ...(backDays === null ? {} : { occurred_at: new Date(Date.now() - backDays * DAY_MS).toISOString() }),
            is_recurring: rng.chance(0.3),
          };
      const res = await post('/api/v1/track/sale', payload, key);
      if (res.statusCode === 200) transactions.push(transactionId);
      if (res.statusCode === 200 && !test && !byKey) fresh.delete(saleClick);
      log.push(`sale${test ? ' test' : ''}${backDays === null ? '' : ` back ${backDays.toFixed(1)}d`} ${res.statusCode}`);
    } else if (roll < 0.95 && processorPayments.length > 0 && rng.chance(0.4)) {
      // The processor's refunded total grows (cumulative); sometimes to the whole amount.
      const p = rng.pick(processorPayments);
      p.refunded = rng.chance(0.2) ? p.amount : Math.min(p.amount, p.refunded + rng.int(1, Math.max(1, Math.floor(p.amount / 2))));
      const res = await deliverProcessorEvent(o.app, event('charge.refunded', charge({ id: p.charge, payment_intent: p.pi, amount: p.amount, amount_refunded: p.refunded })));
      log.push(`processor refund ${p.refunded}/${p.amount} ${res.statusCode} ${res.json().data?.outcome}`);
    } else if (roll < 0.95 && transactions.length > 0) {
      const reason = rng.pick(['refund', 'chargeback'] as const);
      const res = await post('/api/v1/track/refund', { transaction_id: rng.pick(transactions), reason }, key);
      log.push(`${reason} ${res.statusCode}`);
    } else {
      await o.deliver(o.db);
      log.push('deliver');
    }
  }
  await o.deliver(o.db);
  return { program, steps: log };
}

/** Ranges around the data: some hold it, some start or end inside it, some lie before or after. */
function randomRange(rng: Random, today: number): DashboardQuery {
  const first = today - rng.int(-3, 110);
  const last = first + rng.int(0, 75);
  const asParam = (day: number) => {
    if (rng.chance(0.5)) return new Date(day * DAY_MS).toISOString().slice(0, 10);
    // A date-time inside that UTC day, written with some offset: its UTC day is the day meant.
    const instant = day * DAY_MS + rng.int(0, DAY_MS - 1);
    const offsetMinutes = rng.pick([0, 60, -120, 330, -600, 840, -720]);
    const local = new Date(instant + offsetMinutes * 60_000).toISOString().slice(0, 23);
    if (offsetMinutes === 0) return rng.chance(0.5) ? `${local}Z` : local;
    const sign = offsetMinutes > 0 ? '+' : '-';
    const abs = Math.abs(offsetMinutes);
    return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  };
  return { dateFrom: asParam(first), dateTo: asParam(last), ...(rng.chance(0.2) ? { period: rng.pick(['7d', 'all']) } : {}) };
}

const queryString = (query: DashboardQuery) => new URLSearchParams(query as Record<string, string>).toString();

/** Runs the oracle; returns how many responses were compared. Fails with the seed and the history. */
export async function runPerformanceOracle(o: OracleOptions): Promise<number> {
  const rng = seededRandom(o.seed);
  const histories: History[] = [];
  for (let h = 0; h < o.histories; h++) histories.push(await driveHistory(o, rng, `${o.seed}-${h}`));
  let compared = 0;
  const realNow = Date.now();
  // Today, then later days, so the previous windows and the presets' edges move over the data.
  const clocks = [realNow, realNow + rng.int(1, 12) * DAY_MS + rng.int(0, DAY_MS), realNow + rng.int(25, 120) * DAY_MS];
  try {
    for (const now of clocks) {
      o.setNow(now);
      const today = Math.floor(now / DAY_MS);
      for (const history of histories) {
        const queries: DashboardQuery[] = [{}, { period: '7d' }, { period: '30d' }, { period: '90d' }, { period: 'all' }];
        for (let i = 0; i < 4; i++) queries.push(randomRange(rng, today));
        for (const query of queries) {
          const { programId, workspace } = history.program;
          const res = await o.app.inject({
            method: 'GET',
            url: `/api/tracking/performance/${programId}?${queryString(query)}`,
            headers: { authorization: `Bearer ${workspace.memberToken}` },
          });
          const context = `seed ${o.seed}, program ${programId}, now ${new Date(now).toISOString()}, query ${JSON.stringify(query)}\nhistory: ${history.steps.join(', ')}`;
          expect(res.statusCode, `${context}\n${res.body}`).toBe(200);
          expect(res.json(), context).toEqual(await referencePerformance(o.db, programId, query, now));
          compared++;
        }
      }
    }
  } finally {
    o.setNow(undefined);
  }
  return compared;
}

/**
 * The partner portal's oracle (issue 31): after the same random histories, every partner of each
 * program signs into the portal, and GET /api/partner/v1/programs/:programId/performance equals the
 * Postgres reference kept to that partner's records (referencePerformance with a partner), for the
 * presets and random ranges at several clocks; and the partners' clicks add up to the program's
 * dashboard. Returns how many responses were compared.
 */
export async function runPortalOracle(o: OracleOptions): Promise<number> {
  const rng = seededRandom(o.seed);
  const histories: History[] = [];
  for (let h = 0; h < o.histories; h++) histories.push(await driveHistory(o, rng, `${o.seed}-portal-${h}`));
  const partnersOf = sql('oracle.portal_partners', `SELECT partner_id FROM partner_programs WHERE program_id = $1 AND status = 'approved' ORDER BY partner_id`);
  const sessions = new Map<number, { partnerId: number; cookie: string }[]>();
  for (const { program } of histories) {
    const owner = { authorization: `Bearer ${program.workspace.ownerToken}` };
    const list: { partnerId: number; cookie: string }[] = [];
    for (const { partner_id: partnerId } of await o.db.many<{ partner_id: number }>(partnersOf, [program.programId])) {
      const link = await o.app.inject({ method: 'POST', url: `/api/tracking/programs/${program.programId}/partners/${partnerId}/portal-link`, headers: owner });
      expect(link.statusCode, link.body).toBe(200);
      const signIn = await o.app.inject({ method: 'GET', url: new URL(link.json().data.url as string).pathname + new URL(link.json().data.url as string).search });
      expect(signIn.statusCode, signIn.body).toBe(303);
      const cookie = /svc_portal=[^;]*/.exec(String(signIn.headers['set-cookie']))![0];
      list.push({ partnerId: Number(partnerId), cookie });
    }
    sessions.set(program.programId, list);
  }
  let compared = 0;
  const realNow = Date.now();
  const clocks = [realNow, realNow + rng.int(1, 12) * DAY_MS + rng.int(0, DAY_MS), realNow + rng.int(25, 120) * DAY_MS];
  try {
    for (const now of clocks) {
      o.setNow(now);
      const today = Math.floor(now / DAY_MS);
      for (const history of histories) {
        const { programId, workspace } = history.program;
        const queries: DashboardQuery[] = [{}, { period: '7d' }, { period: '30d' }, { period: '90d' }, { period: 'all' }];
        for (let i = 0; i < 3; i++) queries.push(randomRange(rng, today));
        for (const query of queries) {
          let clicks = 0;
          for (const { partnerId, cookie } of sessions.get(programId)!) {
            const res = await o.app.inject({ method: 'GET', url: `/api/partner/v1/programs/${programId}/performance?${queryString(query)}`, headers: { cookie } });
            const context = `seed ${o.seed}, program ${programId}, partner ${partnerId}, now ${new Date(now).toISOString()}, query ${JSON.stringify(query)}\nhistory: ${history.steps.join(', ')}`;
            expect(res.statusCode, `${context}\n${res.body}`).toBe(200);
            const { data, metrics, meta, reporting } = res.json() as Record<string, unknown>;
            expect({ data, metrics, meta, reporting }, context).toEqual(await referencePerformance(o.db, programId, query, now, partnerId));
            clicks += (metrics as { totalClicks: number }).totalClicks;
            compared++;
          }
          // "all" starts at each one's first activity, so only fixed ranges add up to the program's.
          if (query.period === 'all') continue;
          const dashboard = await o.app.inject({
            method: 'GET',
            url: `/api/tracking/performance/${programId}?${queryString(query)}`,
            headers: { authorization: `Bearer ${workspace.memberToken}` },
          });
          expect(clicks, `program ${programId} ${JSON.stringify(query)}`).toBe(dashboard.json().metrics.totalClicks);
        }
      }
    }
  } finally {
    o.setNow(undefined);
  }
  return compared;
}
