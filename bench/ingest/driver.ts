/** wrk runs with the ingest benchmark's settings, summed up per run. */
import { clientIps } from '../client-ips.js';
import { log } from '../output.js';
import { runWrk, type PacedLatency, type RequestSpec, type WrkResult, type WrkThread } from '../wrk.js';
import { REQUEST_TIMEOUT_S } from './settings.js';

export interface PhaseSummary {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  tooMany: number;
  /** 2xx answers whose body lacked the expected field. */
  unreadable: number;
  statusCodes: Record<string, number>;
  /** Seconds. */
  duration: number;
  /** Ids read from the 2xx bodies (click_id, transaction_id) when the phase collects them. */
  ids: string[];
  threads: WrkThread[];
  /** An open-loop run's latency from the schedule (ms), and the rate it was paced at. */
  paced?: PacedLatency & { rate: number };
}

function summarize(name: string, run: WrkResult, rate?: number): PhaseSummary {
  const ok = run.threads.reduce((n, t) => n + t.ok, 0);
  const seconds = run.durationUs / 1e6;
  return {
    name,
    rps: seconds > 0 ? run.requests / seconds : 0,
    p50: run.latencyUs.p50 / 1000,
    p99: run.latencyUs.p99 / 1000,
    ok,
    non2xx: run.requests - ok,
    errors: run.errors.connect + run.errors.read + run.errors.write,
    timeouts: run.errors.timeout,
    tooMany: run.statuses['429'] ?? 0,
    unreadable: run.threads.reduce((n, t) => n + t.unreadable, 0),
    statusCodes: run.statuses,
    duration: seconds,
    ids: run.ids,
    threads: run.threads,
    ...(run.paced && rate
      ? {
          paced: {
            rate,
            count: run.paced.count,
            p50: run.paced.p50 / 1000,
            p99: run.paced.p99 / 1000,
            max: run.paced.max / 1000,
            lagP99: run.paced.lagP99 / 1000,
            lagMax: run.paced.lagMax / 1000,
          },
        }
      : {}),
  };
}

export interface Driver {
  /**
   * One wrk run (wrk stops on its own timer after `duration` seconds); with a rate, open-loop on a
   * fixed schedule.
   */
  drive(name: string, baseUrl: string, spec: RequestSpec, duration: number, rate?: number): Promise<PhaseSummary>;
  /** A client address no request has used, for a request made outside wrk. */
  nextIp(): string;
  /** Client addresses allocated so far. */
  readonly ipsAllocated: number;
}

export function createDriver(options: { wrk: string; threads: number; connections: number; dir: string }): Driver {
  const ips = clientIps();
  let runNumber = 0;
  return {
    async drive(name, baseUrl, spec, duration, rate) {
      const ipBase = ips.used;
      const run = await runWrk({
        wrk: options.wrk,
        baseUrl,
        threads: options.threads,
        connections: options.connections,
        duration,
        timeout: REQUEST_TIMEOUT_S,
        ipBase,
        dir: options.dir,
        name: `${++runNumber}-${name.replace(/[^a-z0-9]+/gi, '-')}`,
        spec,
        ...(rate ? { rate } : {}),
      });
      ips.used = ipBase + options.threads * Math.max(0, ...run.threads.map((t) => t.sent));
      const seen = Object.values(run.statuses).reduce((a, b) => a + b, 0);
      if (seen !== run.requests) log(`  ${name}: wrk counted ${run.requests} responses, its response() callback ${seen}`);
      return summarize(name, run, rate);
    },
    nextIp: () => ips.next(),
    get ipsAllocated() {
      return ips.used;
    },
  };
}
