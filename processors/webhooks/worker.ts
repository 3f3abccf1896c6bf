/**
 * The delivery worker (issue 32, point 3): takes due deliveries from Postgres, sends them, and
 * records each attempt with the delivery's next state. Each endpoint has its own limit of attempts
 * in flight, and an endpoint holding its share is not even taken from the queue, so one slow
 * receiver never delays another's deliveries. Nothing is held only in memory: a delivery taken and
 * not recorded (the process killed) is due again when its lease ends, and is sent again.
 */
import type { Logger } from 'pino';
import type { Database } from '../../core/db.js';
import type { SecretBox } from '../../core/secret-box.js';
import { endpointSecretContext } from '../../schemas/webhooks.js';
import { claim, prune, record, type AttemptResult, type ClaimedDelivery } from './queue.js';
import { DISABLE_AFTER_FAILING_MS, nextAttemptAt } from './schedule.js';
import type { AttemptOutcome, Sender } from './sender.js';

export interface WorkerDeps {
  db: Database;
  sender: Sender;
  box: SecretBox;
  logger: Logger;
  /** Attempts in flight per endpoint (default 10). */
  perEndpoint?: number;
  /** Deliveries taken per claim (default 500). */
  batchSize?: number;
  /** Pause between claims when nothing was due (default 100 ms). */
  pollIntervalMs?: number;
  /** One attempt's deadline: a taken delivery is leased for the attempts queued before it and its own, with room to spare. */
  timeoutMs: number;
  disableAfterMs?: number;
  random?: () => number;
  now?: () => Date;
}

export interface DeliveryWorker {
  /** Claims at once instead of at the next poll (the dispatcher enqueued something). */
  wake(): void;
  /** Stops claiming, finishes the attempts in flight and records them. */
  stop(): Promise<void>;
}

const PRUNE_EVERY_MS = 3_600_000;

/** Deliveries an endpoint may hold taken (queued or in flight) per attempt it runs at once. */
const QUEUED_PER_SLOT = 10;

/** How long a taken delivery stays away from other workers: every attempt queued before it may take the whole deadline. */
export const leaseSeconds = (timeoutMs: number) => Math.ceil((timeoutMs / 1_000) * (QUEUED_PER_SLOT + 2));

interface EndpointLane {
  running: number;
  queue: ClaimedDelivery[];
  /** Its last claim took as many as it could: more may be due. */
  maybeMore: boolean;
}

/** Secrets opened once per sealed value (each rotation seals a new one); undefined: it does not open with this key. */
function secretOpener(box: SecretBox) {
  const opened = new Map<string, string | undefined>();
  return (sealed: string, endpointId: string): string | undefined => {
    if (opened.has(sealed)) return opened.get(sealed);
    let plain: string | undefined;
    try {
      plain = box.open(sealed, endpointSecretContext(endpointId));
    } catch {
      plain = undefined;
    }
    if (opened.size > 10_000) opened.clear();
    opened.set(sealed, plain);
    return plain;
  };
}

/** Records attempts in batches, one statement at a time; a failure keeps them for the next try. */
function resultWriter(deps: WorkerDeps) {
  let waiting: AttemptResult[] = [];
  let flushing: Promise<void> | undefined;
  let closing = false;
  async function drain() {
    while (waiting.length) {
      const taken = waiting;
      waiting = [];
      try {
        const disabled = await record(deps.db, taken, deps.disableAfterMs ?? DISABLE_AFTER_FAILING_MS);
        if (disabled.length) deps.logger.warn({ endpoints: disabled }, 'webhook endpoints disabled: every attempt failed for 5 days');
      } catch (error) {
        waiting = [...taken, ...waiting];
        deps.logger.error({ err: error, results: taken.length }, 'webhook attempts could not be recorded; retrying');
        // Closing with the database gone: their leases end and the deliveries are sent again.
        if (closing) return;
        await new Promise((resolve) => setTimeout(resolve, 500).unref());
      }
    }
  }
  const flush = (): Promise<void> => {
    flushing ??= drain().finally(() => {
      flushing = undefined;
    });
    return flushing;
  };
  return {
    add(result: AttemptResult) {
      waiting.push(result);
      void flush();
    },
    close() {
      closing = true;
      return flush();
    },
  };
}

export function startDeliveryWorker(deps: WorkerDeps): DeliveryWorker {
  const perEndpoint = deps.perEndpoint ?? 10;
  const now = deps.now ?? (() => new Date());
  // An endpoint is claimed for when fewer than half its share are queued, at most half its share at a time.
  const share = perEndpoint * QUEUED_PER_SLOT;
  const claimPerEndpoint = Math.ceil(share / 2);
  const lanes = new Map<string, EndpointLane>();
  const open = secretOpener(deps.box);
  const results = resultWriter(deps);
  const state = { inFlight: 0, stopped: false, wakeRequested: false, wakeUp: undefined as (() => void) | undefined };
  // A wake that comes while a claim runs is kept for the next turn of the loop.
  const wake = () => {
    state.wakeRequested = true;
    state.wakeUp?.();
  };

  async function attempt(d: ClaimedDelivery): Promise<AttemptResult> {
    const signing = [d.secret, ...(d.previous_secret ? [d.previous_secret] : [])].map((s) => open(s, d.endpoint_id));
    const attemptedAt = now();
    const failed = (error: string): AttemptOutcome => ({ ok: false, statusCode: null, durationMs: 0, responseBody: null, error });
    const outcome = signing.some((s) => s === undefined)
      ? failed("the endpoint's secret does not open with this SECRETS_KEY")
      : await deps.sender
          .send({ endpointId: d.endpoint_id, url: d.url, messageId: d.event_id, body: d.body, secrets: signing as string[] })
          // Whatever went wrong is this attempt's failure, logged with the delivery, never a lost result.
          .catch((error: unknown) => failed(String(error).slice(0, 500)));
    const nextAt = outcome.ok ? undefined : nextAttemptAt(d.retries + 1, new Date(d.window_start), now(), deps.random);
    return { deliveryId: d.id, endpointId: d.endpoint_id, attemptedAt, ...outcome, nextAt };
  }

  function pump(endpointId: string) {
    const lane = lanes.get(endpointId)!;
    // Once stopping, nothing new starts: what is queued stays leased and is due again when the lease ends.
    while (!state.stopped && lane.running < perEndpoint && lane.queue.length) {
      const delivery = lane.queue.shift()!;
      lane.running += 1;
      state.inFlight += 1;
      void attempt(delivery)
        .then((result) => results.add(result))
        .finally(() => {
          lane.running -= 1;
          state.inFlight -= 1;
          if (lane.running === 0 && lane.queue.length === 0) lanes.delete(endpointId);
          else pump(endpointId);
          // A fast receiver drains its queue between polls: claim again before it runs dry.
          if (lane.maybeMore && lane.queue.length < share / 4) {
            lane.maybeMore = false;
            wake();
          }
        });
    }
  }

  async function claimOnce(): Promise<number> {
    const busy = [...lanes].filter(([, lane]) => lane.queue.length >= claimPerEndpoint).map(([id]) => id);
    const claimed = await claim(deps.db, { busyEndpoints: busy, perEndpoint: claimPerEndpoint, limit: deps.batchSize ?? 500, leaseSeconds: leaseSeconds(deps.timeoutMs) });
    const counts = new Map<string, number>();
    for (const delivery of claimed) {
      const lane = lanes.get(delivery.endpoint_id) ?? { running: 0, queue: [], maybeMore: false };
      lanes.set(delivery.endpoint_id, lane);
      lane.queue.push(delivery);
      counts.set(delivery.endpoint_id, (counts.get(delivery.endpoint_id) ?? 0) + 1);
    }
    for (const [endpointId, count] of counts) {
      lanes.get(endpointId)!.maybeMore = count >= claimPerEndpoint;
      pump(endpointId);
    }
    return claimed.length;
  }

  const loop = runLoop(deps, state, claimOnce);

  return {
    wake,
    async stop() {
      state.stopped = true;
      state.wakeUp?.();
      await loop;
      while (state.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      await results.close();
    },
  };
}

/** Claims until stopped: again at once after a full batch or a wake, else after the poll interval; prunes the log hourly. */
async function runLoop(deps: WorkerDeps, state: { stopped: boolean; wakeRequested: boolean; wakeUp: (() => void) | undefined }, claimOnce: () => Promise<number>) {
  let lastPrune = 0;
  while (!state.stopped) {
    let claimed = 0;
    try {
      if (Date.now() - lastPrune >= PRUNE_EVERY_MS) {
        lastPrune = Date.now();
        const deleted = await prune(deps.db);
        if (deleted) deps.logger.info({ deleted }, 'old webhook events pruned with their deliveries and attempts');
      }
      claimed = await claimOnce();
    } catch (error) {
      deps.logger.error({ err: error }, 'webhook deliveries could not be claimed; retrying');
    }
    if (claimed >= (deps.batchSize ?? 500) || state.wakeRequested) {
      state.wakeRequested = false;
      continue;
    }
    await new Promise<void>((resolve) => {
      state.wakeUp = resolve;
      setTimeout(resolve, deps.pollIntervalMs ?? 100).unref();
    });
    state.wakeUp = undefined;
  }
}
