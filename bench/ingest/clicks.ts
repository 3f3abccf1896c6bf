/** The bare-route baseline and the click phase (BENCH_PHASES=click: alternating rounds of both). */
import type { Database } from '../../core/db.js';
import { log } from '../output.js';
import { stopChild } from '../processes.js';
import { checkClicks, type ClickDurability } from './durability.js';
import { fixedBodySpec } from '../wrk.js';
import type { Driver } from './driver.js';
import type { PhaseResult, Phases } from './phases.js';
import type { Services } from './services.js';
import type { IngestSettings } from './settings.js';

/** One click outside wrk, answered 200 with its click_id. */
export async function postClick(baseUrl: string, affCode: string, ip: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/v1/track/click`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
    body: JSON.stringify({ affiliate_url: `https://shop.bench.example/?aff=${affCode}` }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`click for ${affCode} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { click_id: string }).click_id;
}

export interface ClickRound {
  baseline: PhaseResult;
  click: PhaseResult;
}

export interface ClickPhases {
  baseline: PhaseResult;
  click: PhaseResult;
  rounds: ClickRound[];
  durability: ClickDurability;
}

export async function runClickPhases(options: {
  settings: IngestSettings;
  driver: Driver;
  phases: Phases;
  db: Database;
  services: Services;
  affCode: string;
}): Promise<ClickPhases> {
  const { settings, driver, phases, db, services, affCode } = options;
  const { service, serviceUrl, baseline, baselineUrl } = services;
  log('\nphases');
  const clickBody = JSON.stringify({ affiliate_url: `https://shop.bench.example/?aff=${affCode}` });
  // The baseline has the same request shape as a click, on an empty route; its answers are read
  // like the clicks' so the load generator does the same work per request.
  const baselineSpec = () => fixedBodySpec('/baseline', clickBody, '"success":(true)', false);
  const baselinePhase = await phases.phase('baseline', baselineUrl, baselineSpec, { pid: baseline.proc.pid });
  const baselineAnswers = baselinePhase.measured.ok - baselinePhase.measured.unreadable;
  if (baselineAnswers === 0) throw new Error('the baseline never answered { success: true }');
  if (settings.phases === 'all') await stopChild(baseline); // idle from here on; frees its memory for the rest of the run

  // Every acknowledged click id is kept for the durability check (wrk's response() reads it from each 2xx body).
  const smokeClickId = await postClick(serviceUrl, affCode, driver.nextIp()); // acknowledged too: counted below
  const clickSpec = () => fixedBodySpec('/api/v1/track/click', clickBody, '"click_id":"([^"]+)"', true);
  const clickPhase = await phases.phase('click', serviceUrl, clickSpec, { db, pid: service.proc.pid });
  // BENCH_PHASES=click with BENCH_ROUNDS: more baseline and click pairs, alternating.
  const rounds = [{ baseline: baselinePhase, click: clickPhase }];
  for (let round = 2; settings.phases === 'click' && round <= settings.rounds; round++) {
    const base = await phases.phase(`baseline round ${round}`, baselineUrl, baselineSpec, { pid: baseline.proc.pid });
    rounds.push({ baseline: base, click: await phases.phase(`click round ${round}`, serviceUrl, clickSpec, { db, pid: service.proc.pid }) });
  }
  const clickRuns = rounds.flatMap((r) => [...(r.click.warm ? [r.click.warm] : []), r.click.measured]);
  const durability = await checkClicks(db, smokeClickId, clickRuns);
  return { baseline: baselinePhase, click: clickPhase, rounds, durability };
}
