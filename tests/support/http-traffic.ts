/**
 * Traffic over real HTTP to services in other processes (the distributed topology): programs made
 * through the API, and customer journeys (click, lead, sale, a recurring sale, a refund) spread
 * over several ingest processes, each journey from a client address of its own.
 */
import { freshIp } from './app.js';

export interface HttpProgram {
  programId: number;
  apiKey: string;
  affCode: string;
}

async function call(base: string, method: string, path: string, token: string, body?: object) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as { data: Record<string, unknown> };
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

/** A program of the owner's workspace with its key and a partner, through the management API. */
export async function createProgramOverHttp(base: string, ownerToken: string, name: string): Promise<HttpProgram> {
  const program = await call(base, 'POST', '/api/tracking/programs', ownerToken, {
    name, domain: 'shop.test.example', commission_type: 'percent', commission_rate: 15, lead_auth: 'server_required',
  });
  const programId = program.id as number;
  const key = await call(base, 'POST', `/api/tracking/programs/${programId}/api-key`, ownerToken);
  const partner = await call(base, 'POST', `/api/tracking/programs/${programId}/partners`, ownerToken, { name: `${name} partner` });
  return { programId, apiKey: key.api_key as string, affCode: partner.aff_code as string };
}

export interface JourneyOutcome {
  /** Every answer's status, by route. */
  statuses: Record<string, number[]>;
}

/** POST a tracking call; the status (0 when the connection failed) and the body. */
export async function track(base: string, route: string, body: object, o: { key?: string; ip?: string } = {}) {
  try {
    const res = await fetch(`${base}/api/v1/track/${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': o.ip ?? freshIp(), ...(o.key ? { authorization: `Bearer ${o.key}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { click_id?: string } };
  } catch {
    return { status: 0, body: {} };
  }
}

/**
 * One customer's journey, each call to the next ingest process in turn: a click (every 7th a test
 * click), a lead, a sale, a recurring second sale for every 4th, a refund or chargeback for every
 * 3rd. A refused call ends the journey (the figures compare whatever was recorded).
 */
export async function journey(bases: readonly string[], program: HttpProgram, i: number, tag: string, outcome: JourneyOutcome): Promise<void> {
  let turn = i;
  const next = () => bases[turn++ % bases.length]!;
  const note = (route: string, status: number) => (outcome.statuses[route] ??= []).push(status);
  const ip = freshIp();
  const click = await track(next(), 'click', { affiliate_url: `https://shop.test.example/?aff=${program.affCode}`, additional_data: { test_mode: i % 7 === 6 } }, { ip });
  note('click', click.status);
  if (click.status !== 200) return;
  const customer = `${tag}-${program.programId}-${i}`;
  const lead = await track(next(), 'lead', { click_id: click.body.click_id, customer_key: customer }, { key: program.apiKey, ip });
  note('lead', lead.status);
  if (lead.status !== 200) return;
  const sale = await track(next(), 'sale', { transaction_id: customer, amount_cents: 1_000 + i, customer_key: customer }, { key: program.apiKey, ip });
  note('sale', sale.status);
  if (sale.status !== 200) return;
  if (i % 4 === 0) note('sale', (await track(next(), 'sale', { transaction_id: `${customer}-r`, amount_cents: 500 + i, customer_key: customer, is_recurring: true }, { key: program.apiKey, ip })).status);
  if (i % 3 === 0) note('refund', (await track(next(), 'refund', { transaction_id: customer, reason: i % 2 ? 'refund' : 'chargeback' }, { key: program.apiKey, ip })).status);
}

/**
 * Journeys started at `perSecond` over the programs in turn until `until()` says stop; resolves
 * once the last one is over, with every status seen.
 */
export async function load(bases: readonly string[], programs: readonly HttpProgram[], o: { perSecond: number; tag: string; until(): boolean }): Promise<JourneyOutcome> {
  const outcome: JourneyOutcome = { statuses: {} };
  const running = new Set<Promise<void>>();
  for (let i = 0; !o.until(); i++) {
    const p = journey(bases, programs[i % programs.length]!, i, o.tag, outcome).finally(() => running.delete(p));
    running.add(p);
    await new Promise((resolve) => setTimeout(resolve, 1_000 / o.perSecond));
  }
  await Promise.all(running);
  return outcome;
}
